#include "core/error.hpp"

namespace mtia {
namespace {

struct ErrorInfo {
    mtiaError_t code;
    const char* name;
    const char* text;
};

constexpr ErrorInfo kErrors[] = {
    {mtiaSuccess, "mtiaSuccess", "no error"},
    {mtiaErrorInvalidValue, "mtiaErrorInvalidValue", "invalid argument"},
    {mtiaErrorMemoryAllocation, "mtiaErrorMemoryAllocation", "out of memory"},
    {mtiaErrorInitializationError, "mtiaErrorInitializationError", "initialization error"},
    {mtiaErrorNoDevice, "mtiaErrorNoDevice", "no MTIA device is available"},
    {mtiaErrorInvalidDevice, "mtiaErrorInvalidDevice", "invalid device ordinal"},
    {mtiaErrorInvalidHandle, "mtiaErrorInvalidHandle", "invalid resource handle"},
    {mtiaErrorIllegalState, "mtiaErrorIllegalState",
     "the operation is not valid in the object's current state"},
    {mtiaErrorNotFound, "mtiaErrorNotFound", "named symbol or file not found"},
    {mtiaErrorNotReady, "mtiaErrorNotReady", "device not ready"},
    {mtiaErrorIllegalAddress, "mtiaErrorIllegalAddress",
     "an illegal memory access was encountered"},
    {mtiaErrorLaunchFailure, "mtiaErrorLaunchFailure",
     "unspecified launch failure (sticky device fault)"},
    {mtiaErrorNotPermitted, "mtiaErrorNotPermitted", "operation not permitted"},
    {mtiaErrorNotSupported, "mtiaErrorNotSupported", "operation not supported"},
    {mtiaErrorStreamCaptureUnsupported, "mtiaErrorStreamCaptureUnsupported",
     "operation not permitted when stream is capturing"},
    {mtiaErrorStreamCaptureInvalidated, "mtiaErrorStreamCaptureInvalidated",
     "operation failed due to a previous error during capture"},
    {mtiaErrorStreamCaptureMerge, "mtiaErrorStreamCaptureMerge",
     "operation would result in a merge of separate capture sequences"},
    {mtiaErrorStreamCaptureUnmatched, "mtiaErrorStreamCaptureUnmatched",
     "capture was not ended in the same stream as it began"},
    {mtiaErrorStreamCaptureUnjoined, "mtiaErrorStreamCaptureUnjoined",
     "capturing stream has unjoined work"},
    {mtiaErrorStreamCaptureIsolation, "mtiaErrorStreamCaptureIsolation",
     "dependency created on uncaptured work in another stream"},
    {mtiaErrorCapturedEvent, "mtiaErrorCapturedEvent",
     "operation not permitted on an event last recorded in a capturing stream"},
    {mtiaErrorStreamCaptureWrongThread, "mtiaErrorStreamCaptureWrongThread",
     "attempt to terminate a thread-local capture sequence from another thread"},
    {mtiaErrorGraphExecUpdateFailure, "mtiaErrorGraphExecUpdateFailure",
     "the graph update was not performed"},
    {mtiaErrorDriver, "mtiaErrorDriver", "the device driver reported an error"},
    {mtiaErrorUnknown, "mtiaErrorUnknown", "unknown error"},
};

const ErrorInfo* find(mtiaError_t code) noexcept {
    for (const ErrorInfo& e : kErrors)
        if (e.code == code) return &e;
    return nullptr;
}

}  // namespace

const char* errorName(mtiaError_t code) noexcept {
    const ErrorInfo* e = find(code);
    return e ? e->name : "unrecognized error code";
}

const char* errorString(mtiaError_t code) noexcept {
    const ErrorInfo* e = find(code);
    return e ? e->text : "unrecognized error code";
}

}  // namespace mtia
