// What an IPC export of an allocation needs from the allocator: the physical
// memory behind its block. Deferring the free of an exported allocation is
// the runtime's business (runtime/context/ipc_memory.cpp): the block simply stays
// allocated until then.
#include "allocator/device_allocator.hpp"

#include "core/error.hpp"

namespace mtia::allocator {

DeviceAllocator::ExportRange DeviceAllocator::exportRange(const void* ptr,
                                                          const char* argName) const {
    const auto p = reinterpret_cast<uintptr_t>(ptr);
    std::unique_lock<FutexMutex> lock(mu_);
    const Block* b = live_.find(p);
    if (b == nullptr) {
        lock.unlock();
        if (auto inside = find(ptr))
            fail(mtiaErrorInvalidValue,
                 "{} {} points inside the allocation at {}; export the pointer the allocation "
                 "returned",
                 argName, ptr, inside->base);
        fail(mtiaErrorInvalidValue,
             "{} {} is not a live allocation of device {} (never allocated or already freed)",
             argName, ptr, device_);
    }
    const Segment& seg = *b->segment;
    if (seg.expandable || seg.mem == nullptr)
        fail(mtiaErrorNotSupported,
             "{} {} lies in an expandable segment, which cannot be exported (set "
             "expandable_segments:False in "
             "MTIA_ALLOC_CONF for memory to share)",
             argName, ptr);
    ExportRange r;
    r.mem = seg.mem;
    const uint64_t into = b->address - seg.base;
    r.offset = into / granularity_ * granularity_;
    r.size = granular(static_cast<size_t>(into - r.offset + b->size));
    r.intoRange = into - r.offset;
    r.requested = b->requested;
    return r;
}

}  // namespace mtia::allocator
