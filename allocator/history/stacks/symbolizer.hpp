// Names for code addresses (return addresses of captured stacks): the module
// (executable or shared object) an address lies in, from the loader's list,
// and the function, from that module's ELF symbol table (.symtab, which names
// functions that are not exported too; .dynsym when the file was stripped),
// demangled. Each module's table is read once, each address named once.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace mtia {

struct NativeFrame {
    std::string module;    // the file's path ("" when the address lies in no loaded module)
    std::string function;  // demangled; "" when no symbol covers the address
    uintptr_t offset =
        0;  // from the function's start, or from the module's load address when unnamed
};

class Symbolizer {
public:
    Symbolizer();
    ~Symbolizer();
    Symbolizer(const Symbolizer&) = delete;
    Symbolizer& operator=(const Symbolizer&) = delete;

    // The process's symbolizer (its caches live until exit). Thread-safe.
    static Symbolizer& instance();

    // Thread-safe; blocking on first use of a module (reads its symbol table from its file). Throws
    // std::bad_alloc only.
    const NativeFrame& symbolize(const void* pc);

private:
    struct Module;
    Module* moduleFor(uintptr_t pc);

    std::mutex mu_;
    std::vector<std::unique_ptr<Module>> modules_;
    std::unordered_map<uintptr_t, NativeFrame> names_;
};

}  // namespace mtia
