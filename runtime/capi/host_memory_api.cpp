// Pinned host memory at the ABI: mtiaMallocHost, mtiaFreeHost and
// mtiaHostRecordStream over the runtime's caching pinned-host allocator.
#include "core/api_guard.hpp"
#include "runtime/context/runtime.hpp"

#include <mtia/mtia.h>

using mtia::apiCall;
using mtia::requireNonNull;
using mtia::Runtime;

extern "C" {

MTIA_API mtiaError_t mtiaMallocHost(void** ptr, size_t size) {
    return apiCall("mtiaMallocHost", [&] {
        requireNonNull(ptr, "ptr");
        Runtime& rt = Runtime::instance();
        // The node the driver reports may belong to another machine (an injected topology): the
        // allocator validates it against this host and places nothing when it does not fit.
        const int node = rt.currentDevice().info().numaNode;
        if (size == 0) {
            *ptr = nullptr;
            return;
        }
        *ptr = rt.hostAllocator().allocate(size, node);
    });
}

MTIA_API mtiaError_t mtiaFreeHost(void* ptr) {
    return apiCall("mtiaFreeHost", [&] {
        if (ptr == nullptr) return;
        Runtime::instance().hostAllocator().free(ptr);
    });
}

MTIA_API mtiaError_t mtiaHostRecordStream(void* hostPtr, mtiaStream_t stream) {
    return apiCall("mtiaHostRecordStream", [&] {
        requireNonNull(hostPtr, "hostPtr");
        Runtime& rt = Runtime::instance();
        rt.hostAllocator().checkLive(hostPtr);  // checked again, atomically with the record
        std::shared_ptr<mtia::streams::Stream> s = rt.stream(stream);
        rt.hostAllocator().recordStream(hostPtr, std::move(s));
    });
}

}  // extern "C"
