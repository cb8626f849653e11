#include "core/api_guard.hpp"
#include "graph/capture.hpp"
#include "runtime/context/runtime.hpp"

#include <mtia/mtia.h>

using mtia::apiCall;
using mtia::fail;
using mtia::requireNonNull;
using mtia::Runtime;
using mtia::graph::CaptureTable;

namespace {

constexpr unsigned kStreamFlags = mtiaStreamNonBlocking;

mtiaError_t createStream(const char* call, mtiaStream_t* stream, unsigned flags, int priority) {
    return apiCall(call, [&] {
        requireNonNull(stream, "stream");
        if ((flags & ~kStreamFlags) != 0)
            fail(mtiaErrorInvalidValue,
                 "flags 0x{:x} has unknown bits (mtiaStreamDefault or mtiaStreamNonBlocking)",
                 flags);
        Runtime& rt = Runtime::instance();
        *stream = rt.streams().create(rt.currentDevice(), flags, priority);
    });
}

// -1 names the current device (as PyTorch's device index does).
mtia::Device& deviceOrCurrent(Runtime& rt, int dev) {
    return dev == -1 ? rt.currentDevice() : rt.device(dev);
}

}  // namespace

extern "C" {

MTIA_API mtiaError_t mtiaStreamCreate(mtiaStream_t* stream) {
    return createStream("mtiaStreamCreate", stream, mtiaStreamDefault, 0);
}

MTIA_API mtiaError_t mtiaStreamCreateWithFlags(mtiaStream_t* stream, unsigned int flags) {
    return createStream("mtiaStreamCreateWithFlags", stream, flags, 0);
}

MTIA_API mtiaError_t mtiaStreamCreateWithPriority(mtiaStream_t* stream, unsigned int flags,
                                                  int priority) {
    return createStream("mtiaStreamCreateWithPriority", stream, flags, priority);
}

MTIA_API mtiaError_t mtiaStreamDestroy(mtiaStream_t stream) {
    return apiCall("mtiaStreamDestroy", [&] {
        if (stream == nullptr) return;
        Runtime& rt = Runtime::instance();
        if (std::shared_ptr<mtia::streams::Stream> s = rt.streams().get(stream); s->capturing()) {
            uint64_t id = 0;
            if (CaptureTable::instance().status(*s, &id) != mtiaStreamCaptureStatusNone)
                fail(mtiaErrorIllegalState,
                     "stream {} is capturing (capture {}); end the capture before destroying it",
                     s->id(), id);
        }
        rt.streams().destroy(stream);
    });
}

MTIA_API mtiaError_t mtiaStreamQuery(mtiaStream_t stream) {
    return apiCall("mtiaStreamQuery", [&] {
        auto s = Runtime::instance().borrowStream(stream);
        if (CaptureTable::anyActive()) [[unlikely]]
            CaptureTable::instance().checkStreamSync(*s, "mtiaStreamQuery");
        return s->query() ? mtiaSuccess : mtiaErrorNotReady;
    });
}

MTIA_API mtiaError_t mtiaStreamSynchronize(mtiaStream_t stream) {
    return apiCall("mtiaStreamSynchronize", [&] {
        auto s = Runtime::instance().borrowStream(stream);
        if (CaptureTable::anyActive()) [[unlikely]]
            CaptureTable::instance().checkStreamSync(*s, "mtiaStreamSynchronize");
        s->synchronize();
    });
}

MTIA_API mtiaError_t mtiaStreamWaitEvent(mtiaStream_t stream, mtiaEvent_t event,
                                         unsigned int flags) {
    return apiCall("mtiaStreamWaitEvent", [&] {
        if ((flags & ~mtiaEventWaitExternal) != 0)
            fail(mtiaErrorInvalidValue,
                 "flags 0x{:x} has unknown bits (mtiaEventWaitDefault or mtiaEventWaitExternal)",
                 flags);
        Runtime& rt = Runtime::instance();
        auto s = rt.borrowStream(stream);
        if (CaptureTable::anyActive()) [[unlikely]] {
            // Fork, join, isolation and external waits; an eager wait otherwise.
            if (CaptureTable::instance().waitEvent(*s, rt.streams().event(event), flags)) return;
        }
        rt.streams().borrowEvent(event)->enqueueWait(*s);
    });
}

MTIA_API mtiaError_t mtiaStreamGetPriority(mtiaStream_t stream, int* priority) {
    return apiCall("mtiaStreamGetPriority", [&] {
        requireNonNull(priority, "priority");
        *priority = Runtime::instance().stream(stream)->priority();
    });
}

MTIA_API mtiaError_t mtiaStreamGetFlags(mtiaStream_t stream, unsigned int* flags) {
    return apiCall("mtiaStreamGetFlags", [&] {
        requireNonNull(flags, "flags");
        *flags = Runtime::instance().stream(stream)->flags();
    });
}

MTIA_API mtiaError_t mtiaStreamGetDevice(mtiaStream_t stream, int* dev) {
    return apiCall("mtiaStreamGetDevice", [&] {
        requireNonNull(dev, "dev");
        *dev = Runtime::instance().stream(stream)->device();
    });
}

MTIA_API mtiaError_t mtiaStreamGetId(mtiaStream_t stream, int64_t* id) {
    return apiCall("mtiaStreamGetId", [&] {
        requireNonNull(id, "id");
        *id = Runtime::instance().stream(stream)->id();
    });
}

MTIA_API mtiaError_t mtiaStreamFromId(int64_t id, mtiaStream_t* stream) {
    return apiCall("mtiaStreamFromId", [&] {
        requireNonNull(stream, "stream");
        *stream = Runtime::instance().streams().fromId(id);
    });
}

MTIA_API mtiaError_t mtiaGetCurrentStream(int dev, mtiaStream_t* stream) {
    return apiCall("mtiaGetCurrentStream", [&] {
        requireNonNull(stream, "stream");
        Runtime& rt = Runtime::instance();
        *stream = rt.streams().currentHandle(deviceOrCurrent(rt, dev));
    });
}

MTIA_API mtiaError_t mtiaSetCurrentStream(mtiaStream_t stream) {
    return apiCall("mtiaSetCurrentStream",
                   [&] { Runtime::instance().streams().setCurrent(stream); });
}

MTIA_API mtiaError_t mtiaGetDefaultStream(int dev, mtiaStream_t* stream) {
    return apiCall("mtiaGetDefaultStream", [&] {
        requireNonNull(stream, "stream");
        Runtime& rt = Runtime::instance();
        *stream = rt.streams().defaultHandle(deviceOrCurrent(rt, dev));
    });
}

MTIA_API mtiaError_t mtiaLaunchHostFunc(mtiaStream_t stream, void (*fn)(void* userData),
                                        void* userData) {
    return apiCall("mtiaLaunchHostFunc", [&] {
        if (fn == nullptr) fail(mtiaErrorInvalidValue, "fn is NULL");
        std::shared_ptr<mtia::streams::Stream> s = Runtime::instance().stream(stream);
        mtiaDrvCommand cmd{};
        cmd.type = mtiaDrvCmdHostFunc;
        cmd.u.hostFunc.fn = fn;
        cmd.u.hostFunc.userData = userData;
        s->submit(cmd);
    });
}

}  // extern "C"
