#include "allocator.h"

#include "mtia_check.h"
#include "streams.h"

#include <c10/core/CachingDeviceAllocator.h>
#include <c10/util/Logging.h>

namespace torch_mtia {
namespace {

void freeDeviceMemory(void* ptr) {
    // Runs in storage destructors, which must not throw. mtiaFree is stream-ordered and never
    // waits.
    const mtiaError_t status = mtiaFree(ptr);
    if (status != mtiaSuccess) LOG(WARNING) << describeFailure(status, "mtiaFree");
}

void copyStat(const mtiaStat& from, c10::CachingAllocator::Stat& to) {
    to.current = from.current;
    to.peak = from.peak;
    to.allocated = from.allocated;
    to.freed = from.freed;
}

void copyStats(const mtiaStat (&from)[3], c10::CachingAllocator::StatArray& to) {
    using c10::CachingAllocator::StatType;
    copyStat(from[mtiaStatAll], to[static_cast<size_t>(StatType::AGGREGATE)]);
    copyStat(from[mtiaStatSmallPool], to[static_cast<size_t>(StatType::SMALL_POOL)]);
    copyStat(from[mtiaStatLargePool], to[static_cast<size_t>(StatType::LARGE_POOL)]);
}

// A c10::DeviceAllocator, so that torch.accelerator's memory functions (memory_stats,
// memory_allocated, reset_peak_memory_stats, empty_cache, get_memory_info) reach the runtime.
class DeviceAllocator final : public c10::DeviceAllocator {
public:
    c10::DataPtr allocate(size_t bytes) override {
        const c10::DeviceIndex dev = currentDevice();
        void* ptr = nullptr;
        if (bytes != 0) MTIA_CHECK(mtiaMalloc(&ptr, bytes));
        return {ptr, ptr, &freeDeviceMemory, c10::Device(kDeviceType, dev)};
    }

    c10::DeleterFnPtr raw_deleter() const override { return &freeDeviceMemory; }

    // Storage copies (clone of a storage): device to device on the current stream, as CUDA's
    // allocator does, and waited for (PyTorch expects dest to hold the bytes on return).
    void copy_data(void* dest, const void* src, std::size_t count) const override {
        if (count == 0) return;
        MTIA_CHECK(mtiaMemcpy(dest, src, count, mtiaMemcpyDeviceToDevice));
    }

    // The runtime initialises itself on first use.
    bool initialized() override { return true; }

    // The default pool: every cached block nothing uses goes back to the device (private graph
    // pools keep theirs, as in CUDA's allocator). The runtime cannot empty one private pool's cache
    // alone: mtiaMemPoolRelease drops a pool (its memory goes back once its last user is gone).
    void emptyCache(c10::MempoolId_t pool) override {
        TORCH_CHECK(pool.first == 0 && pool.second == 0,
                    "torch_mtia: emptying the cache of one private pool (", pool.first, ", ",
                    pool.second,
                    ") is not offered by the runtime; a pool's memory goes back when its graphs "
                    "are destroyed");
        MTIA_CHECK(mtiaEmptyCache());
    }

    void recordStream(const c10::DataPtr& ptr, c10::Stream stream) override {
        if (ptr.get() == nullptr) return;
        MTIA_CHECK(mtiaRecordStream(ptr.get(), streamHandle(stream)));
    }

    c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex device) override {
        return deviceStats(device);
    }

    void resetAccumulatedStats(c10::DeviceIndex device) override {
        MTIA_CHECK(mtiaMemoryResetAccumulatedStats(resolveDevice(device)));
    }

    void resetPeakStats(c10::DeviceIndex device) override {
        MTIA_CHECK(mtiaMemoryResetPeakStats(resolveDevice(device)));
    }

    // (free, total) bytes of the device, across every process using it.
    std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device) override {
        DeviceScope scope(resolveDevice(device));
        size_t free = 0, total = 0;
        MTIA_CHECK(mtiaMemGetInfo(&free, &total));
        return {free, total};
    }
};

DeviceAllocator allocator;

void freeHostMemory(void* ptr) {
    const mtiaError_t status = mtiaFreeHost(ptr);
    if (status != mtiaSuccess) LOG(WARNING) << describeFailure(status, "mtiaFreeHost");
}

class PinnedAllocator final : public c10::Allocator {
public:
    c10::DataPtr allocate(size_t bytes) override {
        void* ptr = nullptr;
        if (bytes != 0) MTIA_CHECK(mtiaMallocHost(&ptr, bytes));
        return {ptr, ptr, &freeHostMemory, c10::Device(c10::DeviceType::CPU)};
    }

    c10::DeleterFnPtr raw_deleter() const override { return &freeHostMemory; }

    void copy_data(void* dest, const void* src, std::size_t count) const override {
        default_copy_data(dest, src, count);
    }
};

PinnedAllocator pinned;

}  // namespace

c10::Allocator* deviceAllocator() {
    return &allocator;
}

c10::CachingDeviceAllocator::DeviceStats deviceStats(c10::DeviceIndex device) {
    mtiaMemoryStats s = MTIA_MEMORY_STATS_INIT;
    MTIA_CHECK(mtiaMemoryGetStats(resolveDevice(device), &s));
    c10::CachingDeviceAllocator::DeviceStats d;
    copyStats(s.allocation, d.allocation);
    copyStats(s.segment, d.segment);
    copyStats(s.active, d.active);
    copyStats(s.inactive_split, d.inactive_split);
    copyStats(s.allocated_bytes, d.allocated_bytes);
    copyStats(s.reserved_bytes, d.reserved_bytes);
    copyStats(s.active_bytes, d.active_bytes);
    copyStats(s.inactive_split_bytes, d.inactive_split_bytes);
    copyStats(s.requested_bytes, d.requested_bytes);
    d.num_alloc_retries = s.num_alloc_retries;
    d.num_ooms = s.num_ooms;
    copyStat(s.oversize_allocations, d.oversize_allocations);
    copyStat(s.oversize_segments, d.oversize_segments);
    d.num_sync_all_streams = s.num_sync_all_streams;
    d.num_device_alloc = s.num_device_alloc;
    d.num_device_free = s.num_device_free;
    d.max_split_size = s.max_split_size;
    return d;
}

c10::Allocator* pinnedAllocator() {
    return &pinned;
}

REGISTER_ALLOCATOR(c10::DeviceType::MTIA, &allocator);

}  // namespace torch_mtia
