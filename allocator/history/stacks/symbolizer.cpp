#include "allocator/history/stacks/symbolizer.hpp"

#include <cxxabi.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace mtia {

namespace {

// A read-only mapping of a whole file; empty when the file cannot be read.
class MappedFile {
public:
    explicit MappedFile(const std::string& path) {
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) return;
        struct stat st {};
        if (::fstat(fd, &st) == 0 && st.st_size > 0) {
            void* p =
                ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
            if (p != MAP_FAILED) {
                data_ = static_cast<const uint8_t*>(p);
                size_ = static_cast<size_t>(st.st_size);
            }
        }
        ::close(fd);
    }
    ~MappedFile() {
        if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
    }
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    // [offset, offset + bytes) of the file, or null when it is not all inside.
    const uint8_t* at(uint64_t offset, uint64_t bytes) const {
        if (data_ == nullptr || offset > size_ || bytes > size_ - offset) return nullptr;
        return data_ + offset;
    }

private:
    const uint8_t* data_ = nullptr;
    size_t size_ = 0;
};

std::string demangle(const char* name) {
    int status = 0;
    char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
    if (d == nullptr) return name;
    std::string out(d);
    std::free(d);
    return out;
}

}  // namespace

struct Symbolizer::Module {
    struct Symbol {
        uintptr_t start;  // load address
        uint64_t size;
        uint32_t name;  // offset into names
    };
    std::string path;
    uintptr_t bias = 0;                                   // load address minus link address
    std::vector<std::pair<uintptr_t, uintptr_t>> ranges;  // executable segments, load addresses
    std::vector<Symbol> symbols;                          // functions by start address
    std::string names;

    bool contains(uintptr_t pc) const {
        for (const auto& [lo, hi] : ranges)
            if (pc >= lo && pc < hi) return true;
        return false;
    }

    // Reads the function symbols of the ELF file at path: .symtab when present, else .dynsym. A
    // file that cannot be read or parsed gives no symbols (frames then name the module only).
    void load() {
        MappedFile file(path);
        const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(file.at(0, sizeof(Elf64_Ehdr)));
        if (eh == nullptr || std::memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
            eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shentsize != sizeof(Elf64_Shdr))
            return;
        const auto* sh = reinterpret_cast<const Elf64_Shdr*>(
            file.at(eh->e_shoff, uint64_t{eh->e_shnum} * sizeof(Elf64_Shdr)));
        if (sh == nullptr) return;
        const Elf64_Shdr* table = nullptr;
        for (int pass = 0; pass < 2 && table == nullptr; ++pass)
            for (unsigned i = 0; i < eh->e_shnum; ++i)
                if (sh[i].sh_type == (pass == 0 ? SHT_SYMTAB : SHT_DYNSYM) &&
                    sh[i].sh_link < eh->e_shnum) {
                    table = &sh[i];
                    break;
                }
        if (table == nullptr || table->sh_entsize != sizeof(Elf64_Sym)) return;
        const Elf64_Shdr& strtab = sh[table->sh_link];
        const auto* syms =
            reinterpret_cast<const Elf64_Sym*>(file.at(table->sh_offset, table->sh_size));
        const auto* strs = reinterpret_cast<const char*>(file.at(strtab.sh_offset, strtab.sh_size));
        if (syms == nullptr || strs == nullptr) return;
        const size_t count = table->sh_size / sizeof(Elf64_Sym);
        for (size_t i = 0; i < count; ++i) {
            const Elf64_Sym& s = syms[i];
            if (ELF64_ST_TYPE(s.st_info) != STT_FUNC || s.st_shndx == SHN_UNDEF || s.st_value == 0)
                continue;
            if (s.st_name >= strtab.sh_size) continue;
            const char* raw = strs + s.st_name;
            const size_t len = strnlen(raw, strtab.sh_size - s.st_name);
            if (len == 0 || len == strtab.sh_size - s.st_name)
                continue;  // empty, or not terminated inside
            symbols.push_back({bias + s.st_value, s.st_size, static_cast<uint32_t>(names.size())});
            names.append(raw, len);
            names.push_back('\0');
        }
        std::sort(symbols.begin(), symbols.end(),
                  [](const Symbol& a, const Symbol& b) { return a.start < b.start; });
    }

    // The function containing pc: the last symbol starting at or before it whose size covers it (a
    // symbol of size 0 covers up to the next one).
    const Symbol* find(uintptr_t pc) const {
        auto it = std::upper_bound(symbols.begin(), symbols.end(), pc,
                                   [](uintptr_t p, const Symbol& s) { return p < s.start; });
        while (it != symbols.begin()) {
            --it;
            if (it->size == 0 || pc - it->start < it->size) return &*it;
            if (pc - it->start >= (uint64_t{1} << 24))
                break;  // far past: symbols nested this deep do not exist
        }
        return nullptr;
    }
};

Symbolizer::Symbolizer() = default;
Symbolizer::~Symbolizer() = default;

Symbolizer& Symbolizer::instance() {
    static auto* s =
        new Symbolizer();  // never destroyed: stacks may be named while the process exits
    return *s;
}

Symbolizer::Module* Symbolizer::moduleFor(uintptr_t pc) {
    for (const auto& m : modules_)
        if (m->contains(pc)) return m.get();
    // A module not seen yet (or loaded since): find it in the loader's list.
    struct Search {
        uintptr_t pc;
        std::unique_ptr<Module> found;
    } search{pc, nullptr};
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* arg) -> int {
            auto* s = static_cast<Search*>(arg);
            bool hit = false;
            for (int i = 0; i < info->dlpi_phnum; ++i) {
                const ElfW(Phdr)& ph = info->dlpi_phdr[i];
                if (ph.p_type != PT_LOAD) continue;
                const uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
                if (s->pc >= lo && s->pc - lo < ph.p_memsz) hit = true;
            }
            if (!hit) return 0;
            auto m = std::make_unique<Module>();
            m->bias = info->dlpi_addr;
            m->path =
                info->dlpi_name != nullptr && info->dlpi_name[0] != '\0' ? info->dlpi_name : "";
            for (int i = 0; i < info->dlpi_phnum; ++i) {
                const ElfW(Phdr)& ph = info->dlpi_phdr[i];
                if (ph.p_type == PT_LOAD)
                    m->ranges.emplace_back(info->dlpi_addr + ph.p_vaddr,
                                           info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
            }
            s->found = std::move(m);
            return 1;
        },
        &search);
    if (!search.found) return nullptr;
    Module* m = search.found.get();
    if (m->path.empty()) {  // the main program: its name through /proc
        char exe[4096];
        const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (n > 0) m->path.assign(exe, static_cast<size_t>(n));
    }
    if (m->path.rfind("linux-vdso", 0) != 0) m->load();
    modules_.push_back(std::move(search.found));
    return m;
}

const NativeFrame& Symbolizer::symbolize(const void* pc) {
    const auto addr = reinterpret_cast<uintptr_t>(pc);
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = names_.find(addr); it != names_.end()) return it->second;
    NativeFrame f;
    if (Module* m = moduleFor(addr)) {
        f.module = m->path;
        if (const Module::Symbol* s = m->find(addr)) {
            f.function = demangle(m->names.c_str() + s->name);
            f.offset = addr - s->start;
        } else {
            f.offset = addr - m->bias;
        }
    }
    return names_.emplace(addr, std::move(f)).first->second;
}

}  // namespace mtia
