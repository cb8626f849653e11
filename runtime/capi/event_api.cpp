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

constexpr unsigned kEventFlags =
    mtiaEventBlockingSync | mtiaEventDisableTiming | mtiaEventInterprocess;

mtiaError_t createEvent(const char* call, mtiaEvent_t* event, unsigned flags) {
    return apiCall(call, [&] {
        requireNonNull(event, "event");
        if ((flags & ~kEventFlags) != 0)
            fail(mtiaErrorInvalidValue,
                 "flags 0x{:x} has unknown bits (mtiaEventBlockingSync, mtiaEventDisableTiming, "
                 "mtiaEventInterprocess)",
                 flags);
        if ((flags & mtiaEventInterprocess) != 0 && (flags & mtiaEventDisableTiming) == 0)
            fail(mtiaErrorInvalidValue,
                 "flags has mtiaEventInterprocess, which requires mtiaEventDisableTiming too");
        Runtime& rt = Runtime::instance();
        *event = rt.streams().createEvent(rt.driver(), rt.currentDevice(), flags);
    });
}

}  // namespace

extern "C" {

MTIA_API mtiaError_t mtiaEventCreate(mtiaEvent_t* event) {
    return createEvent("mtiaEventCreate", event, mtiaEventDefault);
}

MTIA_API mtiaError_t mtiaEventCreateWithFlags(mtiaEvent_t* event, unsigned int flags) {
    return createEvent("mtiaEventCreateWithFlags", event, flags);
}

MTIA_API mtiaError_t mtiaEventRecord(mtiaEvent_t event, mtiaStream_t stream) {
    return apiCall("mtiaEventRecord", [&] {
        Runtime& rt = Runtime::instance();
        auto e = rt.streams().borrowEvent(event);
        auto s = rt.borrowStream(stream);
        if (s->capturing()) [[unlikely]] {
            if (CaptureTable::instance().recordEvent(rt.streams().event(event), *s, false)) return;
        }
        e->record(*s);
    });
}

MTIA_API mtiaError_t mtiaEventQuery(mtiaEvent_t event) {
    return apiCall("mtiaEventQuery", [&] {
        auto e = Runtime::instance().streams().borrowEvent(event);
        if (CaptureTable::anyActive()) [[unlikely]]
            CaptureTable::instance().checkEventSync(*e, "mtiaEventQuery");
        return e->query() ? mtiaSuccess : mtiaErrorNotReady;
    });
}

MTIA_API mtiaError_t mtiaEventSynchronize(mtiaEvent_t event) {
    return apiCall("mtiaEventSynchronize", [&] {
        auto e = Runtime::instance().streams().borrowEvent(event);
        if (CaptureTable::anyActive()) [[unlikely]]
            CaptureTable::instance().checkEventSync(*e, "mtiaEventSynchronize");
        e->synchronize();
    });
}

MTIA_API mtiaError_t mtiaEventElapsedTime(float* ms, mtiaEvent_t start, mtiaEvent_t end) {
    return apiCall("mtiaEventElapsedTime", [&] {
        requireNonNull(ms, "ms");
        mtia::StreamTable& reg = Runtime::instance().streams();
        std::shared_ptr<mtia::streams::Event> s = reg.event(start, "start");
        std::shared_ptr<mtia::streams::Event> e = reg.event(end, "end");
        *ms = mtia::streams::Event::elapsedMs(*s, *e);
    });
}

MTIA_API mtiaError_t mtiaEventDestroy(mtiaEvent_t event) {
    return apiCall("mtiaEventDestroy", [&] {
        if (event == nullptr) return;
        Runtime::instance().streams().destroyEvent(event);
    });
}

}  // extern "C"
