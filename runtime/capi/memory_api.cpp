#include "allocator/history/stacks/native_stack.hpp"
#include "core/api_guard.hpp"
#include "core/sized_struct.hpp"
#include "runtime/context/memory_ops.hpp"
#include "runtime/context/runtime.hpp"

#include <mtia/mtia.h>

using mtia::apiCall;
using mtia::fail;
using mtia::requireNonNull;
using mtia::Runtime;

namespace {

// Memory history: C++ stacks of allocations start at the caller of the API function (allocation
// contexts are captured inside the allocator, many frames below).
// Only while history is recorded: the thread-local costs a __tls_get_addr call each way on every
// allocation otherwise (libmtia's TLS is dynamic).
struct ApiCaller {
    ApiCaller(const void* returnAddress, Runtime& rt)
        : active_(rt.allocatorContext().history().recording()) {
        if (active_) mtia::tlApiReturnAddress = returnAddress;
    }
    ~ApiCaller() {
        if (active_) mtia::tlApiReturnAddress = nullptr;
    }
    ApiCaller(const ApiCaller&) = delete;
    ApiCaller& operator=(const ApiCaller&) = delete;

private:
    bool active_;
};

}  // namespace

extern "C" {

MTIA_API mtiaError_t mtiaMalloc(void** ptr, size_t size) {
    const void* returnAddress = __builtin_return_address(0);
    return apiCall("mtiaMalloc", [&] {
        requireNonNull(ptr, "ptr");
        Runtime& rt = Runtime::instance();
        const ApiCaller caller(returnAddress, rt);
        mtia::Device& dev = rt.currentDevice();
        if (size == 0) {
            *ptr = nullptr;
            return;
        }
        dev.checkHealthy();
        rt.ipc().collect();
        auto stream = rt.borrowStream(nullptr);
        *ptr = dev.memory().allocate(size, *stream);
    });
}

MTIA_API mtiaError_t mtiaMallocAsync(void** ptr, size_t size, mtiaStream_t stream) {
    const void* returnAddress = __builtin_return_address(0);
    return apiCall("mtiaMallocAsync", [&] {
        requireNonNull(ptr, "ptr");
        Runtime& rt = Runtime::instance();
        const ApiCaller caller(returnAddress, rt);
        auto s = rt.borrowStream(stream);
        mtia::Device& dev = rt.device(s->device());
        if (size == 0) {
            *ptr = nullptr;
            return;
        }
        dev.checkHealthy();
        rt.ipc().collect();
        *ptr = dev.memory().allocate(size, *s);
    });
}

namespace {

// The allocator of the device whose memory ptr is; InvalidValue naming ptr otherwise.
mtia::allocator::DeviceAllocator& allocatorOf(Runtime& rt, const void* ptr) {
    mtia::Device* dev = rt.deviceOfAddress(ptr);
    mtia::allocator::DeviceAllocator* mem = dev != nullptr ? dev->memoryIfStarted() : nullptr;
    if (mem == nullptr)
        fail(mtiaErrorInvalidValue,
             "ptr {} is not device memory from mtiaMalloc (a host pointer, or never allocated)",
             ptr);
    return *mem;
}

}  // namespace

MTIA_API mtiaError_t mtiaFree(void* ptr) {
    return apiCall("mtiaFree", [&] {
        if (ptr == nullptr) return;
        Runtime& rt = Runtime::instance();
        mtia::allocator::DeviceAllocator& alloc = allocatorOf(rt, ptr);
        rt.ipc().collect();
        // An exported allocation that other processes still have open is freed once they closed it.
        if (rt.ipc().interceptFree(alloc, ptr)) return;
        alloc.free(ptr);
    });
}

MTIA_API mtiaError_t mtiaRecordStream(void* ptr, mtiaStream_t stream) {
    return apiCall("mtiaRecordStream", [&] {
        requireNonNull(ptr, "ptr");
        Runtime& rt = Runtime::instance();
        std::shared_ptr<mtia::streams::Stream> s = rt.stream(stream);
        allocatorOf(rt, ptr).recordStream(ptr, std::move(s));
    });
}

MTIA_API mtiaError_t mtiaMemcpy(void* dst, const void* src, size_t count, mtiaMemcpyKind kind) {
    return apiCall("mtiaMemcpy", [&] {
        const int k = mtia::enumBits(kind);
        if (k < mtiaMemcpyHostToHost || k > mtiaMemcpyDefault)
            fail(mtiaErrorInvalidValue, "kind {} is not an mtiaMemcpyKind (0 to 4)", k);
        mtia::copySync(Runtime::instance(), dst, src, count, static_cast<mtiaMemcpyKind>(k));
    });
}

MTIA_API mtiaError_t mtiaMemset(void* ptr, int value, size_t count) {
    return apiCall("mtiaMemset", [&] { mtia::fillSync(Runtime::instance(), ptr, value, count); });
}

MTIA_API mtiaError_t mtiaMemcpyAsync(void* dst, const void* src, size_t count, mtiaMemcpyKind kind,
                                     mtiaStream_t stream) {
    return apiCall("mtiaMemcpyAsync", [&] {
        const int k = mtia::enumBits(kind);
        if (k < mtiaMemcpyHostToHost || k > mtiaMemcpyDefault)
            fail(mtiaErrorInvalidValue, "kind {} is not an mtiaMemcpyKind (0 to 4)", k);
        Runtime& rt = Runtime::instance();
        std::shared_ptr<mtia::streams::Stream> s = rt.stream(stream);
        mtia::copyAsync(rt, dst, src, count, static_cast<mtiaMemcpyKind>(k), *s);
    });
}

MTIA_API mtiaError_t mtiaMemsetAsync(void* ptr, int value, size_t count, mtiaStream_t stream) {
    return apiCall("mtiaMemsetAsync", [&] {
        Runtime& rt = Runtime::instance();
        std::shared_ptr<mtia::streams::Stream> s = rt.stream(stream);
        mtia::fillAsync(rt, ptr, value, count, *s);
    });
}

MTIA_API mtiaError_t mtiaMemcpyPeerAsync(void* dst, int dstDev, const void* src, int srcDev,
                                         size_t count, mtiaStream_t stream) {
    return apiCall("mtiaMemcpyPeerAsync", [&] {
        Runtime& rt = Runtime::instance();
        std::shared_ptr<mtia::streams::Stream> s = rt.stream(stream);
        mtia::copyPeerAsync(rt, dst, dstDev, src, srcDev, count, *s);
    });
}

MTIA_API mtiaError_t mtiaPointerGetAttributes(mtiaPointerAttributes* attr, const void* ptr) {
    return apiCall("mtiaPointerGetAttributes", [&] {
        mtia::checkSized(attr, "attr");
        mtia::pointerAttributes(Runtime::instance(), ptr, attr);
    });
}

}  // extern "C"
