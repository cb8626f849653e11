#include "allocator/host_pages.hpp"

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>

namespace mtia::allocator {

size_t hostPageSize() noexcept {
    static const size_t page = [] {
        const long p = sysconf(_SC_PAGESIZE);
        return p > 0 ? static_cast<size_t>(p) : size_t{4096};
    }();
    return page;
}

void* mapHostPages(size_t size) noexcept {
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : p;
}

void unmapHostPages(void* addr, size_t size) noexcept {
    munmap(addr, size);
}

void touchHostPages(void* addr, size_t size) noexcept {
    // A write per page: a read would only map the shared zero page and decide nothing.
    auto* bytes = static_cast<volatile unsigned char*>(addr);
    for (size_t off = 0; off < size; off += hostPageSize()) bytes[off] = 0;
}

bool lockHostPages(void* addr, size_t size) noexcept {
    return mlock(addr, size) == 0;
}

size_t hostLockLimit() noexcept {
    rlimit lim{};
    if (getrlimit(RLIMIT_MEMLOCK, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) return SIZE_MAX;
    return lim.rlim_cur >= SIZE_MAX ? SIZE_MAX : static_cast<size_t>(lim.rlim_cur);
}

}  // namespace mtia::allocator
