// What the runtime's memory operations need to know about a device pointer:
// the allocation it lies in (as the caller sees it) and its device.
#pragma once

#include <cstddef>

namespace mtia::allocator {

struct Allocation {
    void* base = nullptr;
    size_t size = 0;      // bytes the caller asked for
    size_t reserved = 0;  // bytes of the block behind it (size rounded up)
    int device = -1;
};

}  // namespace mtia::allocator
