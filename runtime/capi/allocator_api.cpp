// The caching allocator's controls at the ABI: settings, memory fraction,
// statistics, observers, emptying the cache, and private pools.
#include "core/api_guard.hpp"
#include "core/sized_struct.hpp"
#include "runtime/context/runtime.hpp"

#include <mtia/mtia.h>

#include <cstring>
#include <mutex>
#include <string_view>

using mtia::apiCall;
using mtia::fail;
using mtia::requireNonNull;
using mtia::Runtime;
namespace alloc = mtia::allocator;

namespace {

void copyStat(mtiaStat& out, const alloc::Stat& in) {
    out.current = in.current;
    out.peak = in.peak;
    out.allocated = in.allocated;
    out.freed = in.freed;
}

void copyStats(mtiaStat (&out)[3], const alloc::StatArray& in) {
    for (int i = 0; i < 3; ++i) copyStat(out[i], in.views[static_cast<size_t>(i)]);
}

mtiaMemoryStats toAbi(const alloc::DeviceStats& s) {
    mtiaMemoryStats out{};
    out.structSize = sizeof(out);
    copyStats(out.allocation, s.allocation);
    copyStats(out.segment, s.segment);
    copyStats(out.active, s.active);
    copyStats(out.inactive_split, s.inactiveSplit);
    copyStats(out.allocated_bytes, s.allocatedBytes);
    copyStats(out.reserved_bytes, s.reservedBytes);
    copyStats(out.active_bytes, s.activeBytes);
    copyStats(out.inactive_split_bytes, s.inactiveSplitBytes);
    copyStats(out.requested_bytes, s.requestedBytes);
    out.num_alloc_retries = s.numAllocRetries;
    out.num_ooms = s.numOoms;
    out.num_sync_all_streams = s.numSyncAllStreams;
    out.num_device_alloc = s.numDeviceAlloc;
    out.num_device_free = s.numDeviceFree;
    copyStat(out.oversize_allocations, s.oversizeAllocations);
    copyStat(out.oversize_segments, s.oversizeSegments);
    out.max_split_size = s.maxSplitSize;
    return out;
}

alloc::PoolId poolId(mtiaMemPoolId_t id) {
    return alloc::PoolId{id.first, id.second};
}

}  // namespace

extern "C" {

MTIA_API mtiaError_t mtiaEmptyCache(void) {
    return apiCall("mtiaEmptyCache", [&] {
        Runtime& rt = Runtime::instance();
        rt.ipc().collect();
        // Every device is emptied even when one of them fails; the first failure is reported.
        std::optional<mtia::Error> first;
        for (int i = 0; i < rt.deviceCount(); ++i) {
            alloc::DeviceAllocator* mem = rt.device(i).memoryIfStarted();
            if (mem == nullptr) continue;
            try {
                mem->emptyCache();
            } catch (const mtia::Error& e) {
                if (!first) first = e;
            }
        }
        rt.hostAllocator().emptyCache();
        if (first) throw *first;
    });
}

MTIA_API mtiaError_t mtiaAllocatorSetConfig(const char* conf) {
    return apiCall("mtiaAllocatorSetConfig", [&] {
        requireNonNull(conf, "conf");
        Runtime& rt = Runtime::instance();
        alloc::AllocatorContext& ctx = rt.allocatorContext();
        // Concurrent calls apply one after the other, so every allocator ends with the same
        // settings.
        static std::mutex applying;
        std::lock_guard lock(applying);
        const alloc::AllocConfig next = alloc::AllocConfig::parse(conf, ctx.config());
        ctx.setConfig(next);
        rt.hostAllocator().setConfig(next);
        // A key name cannot appear inside a value (numbers, True/False, lists of numbers): the
        // parser accepted the string, so finding the name means the string set it.
        const bool namesFraction =
            std::string_view(conf).find("per_process_memory_fraction") != std::string_view::npos;
        for (int i = 0; i < rt.deviceCount(); ++i)
            if (alloc::DeviceAllocator* mem = rt.device(i).memoryIfStarted())
                mem->setConfig(next, namesFraction);
    });
}

MTIA_API mtiaError_t mtiaAllocatorGetConfig(char* buf, size_t len) {
    return apiCall("mtiaAllocatorGetConfig", [&] {
        requireNonNull(buf, "buf");
        const std::string text = Runtime::instance().allocatorContext().config().format();
        if (text.size() + 1 > len)
            fail(mtiaErrorInvalidValue,
                 "len is {}, but the settings need {} bytes with the terminating NUL", len,
                 text.size() + 1);
        std::memcpy(buf, text.c_str(), text.size() + 1);
    });
}

MTIA_API mtiaError_t mtiaSetMemoryFraction(double fraction, int dev) {
    return apiCall("mtiaSetMemoryFraction", [&] {
        if (!(fraction >= 0.0 && fraction <= 1.0))
            fail(mtiaErrorInvalidValue, "fraction is {}; expected 0 to 1", fraction);
        Runtime::instance().device(dev).memory().setMemoryFraction(fraction);
    });
}

MTIA_API mtiaError_t mtiaMemoryGetStats(int dev, mtiaMemoryStats* out) {
    return apiCall("mtiaMemoryGetStats", [&] {
        mtia::checkSized(out, "out");
        mtia::Device& d = Runtime::instance().device(dev);
        alloc::DeviceAllocator* mem = d.memoryIfStarted();
        alloc::DeviceStats s = mem != nullptr ? mem->stats() : alloc::DeviceStats{};
        if (mem == nullptr) {
            const alloc::AllocConfig c = Runtime::instance().allocatorContext().config();
            s.maxSplitSize = c.maxSplitSize == alloc::AllocConfig::kUnlimited
                                 ? -1
                                 : static_cast<int64_t>(c.maxSplitSize);
        }
        mtia::writeSized(out, toAbi(s));
    });
}

MTIA_API mtiaError_t mtiaMemoryResetPeakStats(int dev) {
    return apiCall("mtiaMemoryResetPeakStats", [&] {
        if (alloc::DeviceAllocator* mem = Runtime::instance().device(dev).memoryIfStarted())
            mem->resetPeakStats();
    });
}

MTIA_API mtiaError_t mtiaMemoryResetAccumulatedStats(int dev) {
    return apiCall("mtiaMemoryResetAccumulatedStats", [&] {
        if (alloc::DeviceAllocator* mem = Runtime::instance().device(dev).memoryIfStarted())
            mem->resetAccumulatedStats();
    });
}

MTIA_API mtiaError_t mtiaAttachOutOfMemoryObserver(void (*cb)(int, size_t, size_t, size_t, void*),
                                                   void* user) {
    return apiCall("mtiaAttachOutOfMemoryObserver", [&] {
        if (cb == nullptr) fail(mtiaErrorInvalidValue, "cb is NULL");
        Runtime::instance().allocatorContext().addOomObserver(cb, user);
    });
}

MTIA_API mtiaError_t mtiaAttachFreeMemoryCallback(int (*cb)(int, size_t, void*), void* user) {
    return apiCall("mtiaAttachFreeMemoryCallback", [&] {
        if (cb == nullptr) fail(mtiaErrorInvalidValue, "cb is NULL");
        Runtime::instance().allocatorContext().addFreeMemoryCallback(cb, user);
    });
}

MTIA_API mtiaError_t mtiaGraphPoolHandle(mtiaMemPoolId_t* id) {
    return apiCall("mtiaGraphPoolHandle", [&] {
        requireNonNull(id, "id");
        const alloc::PoolId p = Runtime::instance().allocatorContext().newPoolId();
        id->first = p.first;
        id->second = p.second;
    });
}

MTIA_API mtiaError_t mtiaMemPoolBeginAllocateToPool(int dev, mtiaMemPoolId_t id,
                                                    mtiaStream_t filter) {
    return apiCall("mtiaMemPoolBeginAllocateToPool", [&] {
        if (id.first == 0 && id.second == 0)
            fail(mtiaErrorInvalidValue,
                 "id is {{0, 0}}, the default pool; pass a private pool's id");
        Runtime& rt = Runtime::instance();
        mtia::Device& d = rt.device(dev);
        std::shared_ptr<mtia::streams::Stream> s;
        if (filter != nullptr) {
            s = rt.stream(filter, "filter");
            if (s->device() != d.ordinal())
                fail(mtiaErrorInvalidValue, "filter is a stream of device {}, not of dev {}",
                     s->device(), dev);
        }
        d.memory().beginAllocateToPool(poolId(id), s.get());
    });
}

MTIA_API mtiaError_t mtiaMemPoolEndAllocateToPool(int dev, mtiaMemPoolId_t id) {
    return apiCall("mtiaMemPoolEndAllocateToPool",
                   [&] { Runtime::instance().device(dev).memory().endAllocateToPool(poolId(id)); });
}

MTIA_API mtiaError_t mtiaMemPoolRelease(int dev, mtiaMemPoolId_t id) {
    return apiCall("mtiaMemPoolRelease",
                   [&] { Runtime::instance().device(dev).memory().releasePool(poolId(id)); });
}

}  // extern "C"
