#include "memory.hpp"

#include "config.hpp"
#include "error.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iterator>

namespace mtia::sim {
namespace {

constexpr uint64_t kAddressSpanFactor = 4;

bool granular(uint64_t value) {
    return value % kGranularity == 0;
}

std::string errnoText(int err) {
    return std::strerror(err);
}

}  // namespace

DeviceMemory::DeviceMemory(RegistryLink& registry, int32_t device, uint64_t capacity)
    : device_(device), span_(capacity * kAddressSpanFactor), capacity_(registry, device, capacity) {
}

DeviceMemory::~DeviceMemory() {
    const uintptr_t base = base_.load(std::memory_order_relaxed);
    if (base != 0) munmap(reinterpret_cast<void*>(base), span_);
    if (memfd_ >= 0) close(memfd_);
}

mtiaError_t DeviceMemory::ensureReservedLocked() {
    if (base_.load(std::memory_order_relaxed) != 0) return mtiaSuccess;
    // Over-reserve by one granule and trim, so the range itself is granule-aligned and alignment
    // requests hold for the addresses, not just for offsets into the range.
    const uint64_t length = span_ + kGranularity;
    void* raw =
        mmap(nullptr, length, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED) {
        return reportErrorf(mtiaErrorMemoryAllocation,
                            "device {}: cannot reserve {} bytes of address space: {}", device_,
                            length, errnoText(errno));
    }
    const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
    const uintptr_t base = (start + kGranularity - 1) & ~(uintptr_t{kGranularity} - 1);
    if (base > start) munmap(raw, base - start);
    const uintptr_t tail = base + span_;
    if (start + length > tail) munmap(reinterpret_cast<void*>(tail), start + length - tail);
    va_ = RangeAllocator(base, span_);
    base_.store(base, std::memory_order_release);
    return mtiaSuccess;
}

mtiaError_t DeviceMemory::ensureBackingLocked() {
    if (memfd_ >= 0) return mtiaSuccess;
    const std::string name = fmt::format("mtia-sim-dev{}", device_);
    const int fd = memfd_create(name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) {
        return reportErrorf(mtiaErrorMemoryAllocation, "device {}: memfd_create failed: {}",
                            device_, errnoText(errno));
    }
    // Sparse: the size costs nothing until pages are touched. The seals guarantee that nobody
    // sharing the fd can truncate it under a mapping (which would turn accesses into SIGBUS).
    if (ftruncate(fd, static_cast<off_t>(span_)) != 0 ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) != 0) {
        const int err = errno;
        close(fd);
        return reportErrorf(mtiaErrorMemoryAllocation,
                            "device {}: cannot size the memory file to {} bytes: {}", device_,
                            span_, errnoText(err));
    }
    memfd_ = fd;
    file_ = RangeAllocator(0, span_);
    return mtiaSuccess;
}

mtiaError_t DeviceMemory::addressRange(uint64_t* base, uint64_t* size) {
    std::lock_guard lock(mu_);
    if (mtiaError_t err = ensureReservedLocked(); err != mtiaSuccess) return err;
    *base = base_.load(std::memory_order_relaxed);
    *size = span_;
    return mtiaSuccess;
}

mtiaError_t DeviceMemory::vaReserve(uint64_t size, uint64_t alignment, void** va) {
    if (size == 0 || !granular(size)) {
        return reportErrorf(mtiaErrorInvalidValue,
                            "vaReserve: size {} is not a positive multiple of the granularity {}",
                            size, kGranularity);
    }
    if (alignment == 0) alignment = kGranularity;
    if ((alignment & (alignment - 1)) != 0 || !granular(alignment)) {
        return reportErrorf(mtiaErrorInvalidValue,
                            "vaReserve: alignment {} is not a power of two that is a multiple of "
                            "the granularity {}",
                            alignment, kGranularity);
    }
    std::lock_guard lock(mu_);
    if (mtiaError_t err = ensureReservedLocked(); err != mtiaSuccess) return err;
    const std::optional<uint64_t> start = va_.allocate(size, alignment);
    if (!start) {
        return reportErrorf(mtiaErrorMemoryAllocation,
                            "vaReserve: device {} has no free range of {} bytes aligned to {} "
                            "(address space {} bytes, {} free)",
                            device_, size, alignment, span_, va_.freeBytes());
    }
    reservations_.emplace(*start, size);
    *va = reinterpret_cast<void*>(*start);
    return mtiaSuccess;
}

mtiaError_t DeviceMemory::vaRelease(void* va, uint64_t size) {
    const uintptr_t start = reinterpret_cast<uintptr_t>(va);
    std::lock_guard lock(mu_);
    auto it = reservations_.find(start);
    if (it == reservations_.end() || it->second != size) {
        return reportErrorf(mtiaErrorInvalidValue,
                            "vaRelease: [{}, +{}) is not a reservation of device {}", va, size,
                            device_);
    }
    {
        std::shared_lock mapLock(mappingsMu_);
        auto m = mappings_.lower_bound(start);
        if (m != mappings_.end() && m->first - start < size) {
            return reportErrorf(
                mtiaErrorIllegalState,
                "vaRelease: reservation {} of device {} still has mappings (first at {})", va,
                device_, reinterpret_cast<void*>(m->first));
        }
    }
    va_.release(start, size);
    reservations_.erase(it);
    return mtiaSuccess;
}

mtiaError_t DeviceMemory::create(uint64_t size, std::unique_ptr<PhysicalMemory>& mem) {
    if (size == 0 || !granular(size)) {
        return reportErrorf(mtiaErrorInvalidValue,
                            "memCreate: size {} is not a positive multiple of the granularity {}",
                            size, kGranularity);
    }
    std::lock_guard lock(mu_);
    if (mtiaError_t err = capacity_.charge(size); err != mtiaSuccess) return err;
    if (mtiaError_t err = ensureBackingLocked(); err != mtiaSuccess) {
        capacity_.refund(size);
        return err;
    }
    const std::optional<uint64_t> offset = file_.allocate(size, kGranularity);
    if (!offset) {
        capacity_.refund(size);
        return reportErrorf(mtiaErrorMemoryAllocation,
                            "out of memory on device {}: this process's physical memory is too "
                            "fragmented for {} bytes "
                            "(memory file of {} bytes, {} free)",
                            device_, size, span_, file_.freeBytes());
    }
    mem = std::make_unique<PhysicalMemory>();
    mem->owner = this;
    mem->fileOffset = *offset;
    mem->size = size;
    return mtiaSuccess;
}

mtiaError_t DeviceMemory::release(PhysicalMemory& mem) {
    std::lock_guard lock(mu_);
    if (mem.mappings != 0) {
        return reportErrorf(mtiaErrorIllegalState,
                            "memRelease: memory of device {} is still mapped {} time(s)", device_,
                            mem.mappings);
    }
    // Punching the hole gives the pages back to the host now; reused offsets then read as zeros.
    // Should the filesystem refuse, the pages are simply reused as they are.
    (void)fallocate(memfd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                    static_cast<off_t>(mem.fileOffset), static_cast<off_t>(mem.size));
    file_.release(mem.fileOffset, mem.size);
    capacity_.refund(mem.size);
    return mtiaSuccess;
}

mtiaError_t DeviceMemory::map(void* va, uint64_t size, PhysicalMemory& mem, uint64_t offset) {
    const uintptr_t start = reinterpret_cast<uintptr_t>(va);
    if (size == 0 || !granular(size) || !granular(offset) || !granular(start)) {
        return reportErrorf(mtiaErrorInvalidValue,
                            "memMap: address {}, size {} and offset {} must be multiples of the "
                            "granularity {} (size > 0)",
                            va, size, offset, kGranularity);
    }
    if (offset > mem.size || size > mem.size - offset) {
        return reportErrorf(mtiaErrorInvalidValue,
                            "memMap: [offset {}, +{}) exceeds the memory's {} bytes", offset, size,
                            mem.size);
    }
    std::lock_guard lock(mu_);
    bool insideReservation = false;
    if (auto r = reservations_.upper_bound(start); r != reservations_.begin()) {
        --r;
        const uint64_t into = start - r->first;
        insideReservation = into < r->second && size <= r->second - into;
    }
    if (!insideReservation) {
        return reportErrorf(mtiaErrorInvalidValue,
                            "memMap: [{}, +{}) does not lie inside one reservation of device {}",
                            va, size, device_);
    }
    {
        std::shared_lock mapLock(mappingsMu_);
        auto m = mappings_.lower_bound(start);
        const bool overlapsNext = m != mappings_.end() && m->first - start < size;
        const bool overlapsPrev =
            m != mappings_.begin() && std::prev(m)->first + std::prev(m)->second.size > start;
        if (overlapsNext || overlapsPrev) {
            return reportErrorf(mtiaErrorIllegalState,
                                "memMap: [{}, +{}) of device {} is already (partly) mapped", va,
                                size, device_);
        }
    }
    void* got = mmap(va, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, memfd_,
                     static_cast<off_t>(mem.fileOffset + offset));
    if (got == MAP_FAILED) {
        return reportErrorf(mtiaErrorMemoryAllocation, "memMap: mapping {} bytes at {} failed: {}",
                            size, va, errnoText(errno));
    }
    {
        std::unique_lock mapLock(mappingsMu_);
        mappings_.emplace(start, Mapping{size, &mem});
    }
    ++mem.mappings;
    return mtiaSuccess;
}

mtiaError_t DeviceMemory::unmap(void* va, uint64_t size) {
    const uintptr_t start = reinterpret_cast<uintptr_t>(va);
    std::lock_guard lock(mu_);
    std::unique_lock mapLock(mappingsMu_);
    // The range must be made of whole mappings, back to back, starting at va.
    auto first = mappings_.find(start);
    auto last = first;
    uint64_t covered = 0;
    while (last != mappings_.end() && last->first == start + covered && covered < size) {
        covered += last->second.size;
        ++last;
    }
    if (first == mappings_.end() || size == 0 || covered != size) {
        return reportErrorf(mtiaErrorInvalidValue,
                            "memUnmap: [{}, +{}) is not exactly a mapped range of device {}", va,
                            size, device_);
    }
    for (auto it = first; it != last; ++it) --it->second.mem->mappings;
    mappings_.erase(first, last);
    mapLock.unlock();
    // Mapping anonymous PROT_NONE over the range drops the file pages and keeps the addresses
    // reserved.
    if (mmap(va, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0) ==
        MAP_FAILED) {
        return reportErrorf(mtiaErrorDriver, "memUnmap: restoring the reservation at {} failed: {}",
                            va, errnoText(errno));
    }
    return mtiaSuccess;
}

mtiaError_t DeviceMemory::info(uint64_t* free, uint64_t* total) const {
    uint64_t used = 0;
    if (mtiaError_t err = capacity_.used(used); err != mtiaSuccess) return err;
    *free = used < capacity_.total() ? capacity_.total() - used : 0;
    *total = capacity_.total();
    return mtiaSuccess;
}

bool DeviceMemory::inAddressRange(const void* p) const {
    const uintptr_t base = base_.load(std::memory_order_acquire);
    const uintptr_t addr = reinterpret_cast<uintptr_t>(p);
    return base != 0 && addr >= base && addr - base < span_;
}

bool DeviceMemory::isMapped(const void* p, uint64_t bytes) const {
    if (!inAddressRange(p)) return false;
    std::shared_lock lock(mappingsMu_);
    return isMappedLocked(reinterpret_cast<uintptr_t>(p), bytes == 0 ? 1 : bytes);
}

bool DeviceMemory::isMappedLocked(uintptr_t start, uint64_t bytes) const {
    if (bytes > UINTPTR_MAX - start) return false;
    const uintptr_t end = start + bytes;
    auto it = mappings_.upper_bound(start);
    if (it == mappings_.begin()) return false;
    --it;
    uintptr_t covered = it->first + it->second.size;  // end of the mapping holding start, if any
    if (covered <= start) return false;
    // Expandable segments map neighbouring chunks back to back; a range may span several.
    while (covered < end) {
        ++it;
        if (it == mappings_.end() || it->first != covered) return false;
        covered += it->second.size;
    }
    return true;
}

}  // namespace mtia::sim
