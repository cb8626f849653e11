// The one place where C++ meets the C ABI: every extern "C" entry point runs
// its body through apiCall(), which turns exceptions into status codes and
// sets the thread-local message. No exception ever crosses the boundary.
#pragma once

#include "core/error.hpp"
#include "core/last_error.hpp"

#include <mtia/mtia_types.h>

#include <cstdint>
#include <exception>
#include <new>
#include <type_traits>

namespace mtia {

namespace detail {
// One thread-local block, so the check every ABI call makes costs one TLS lookup. Whether a thread
// is one of the driver's own never changes during its life, so the driver is asked once per thread
// (once the probe is known).
struct ThreadState {
    bool inCallback = false;
    int8_t driverThread = -1;  // -1: not asked yet
};
inline thread_local ThreadState tlsState;
bool askDriverThread(ThreadState& t) noexcept;
}  // namespace detail

// True while this thread runs device work (a host function or kernel) for a
// driver; the runtime must not be re-entered from there. Inline: every ABI call asks.
inline bool inDeviceCallback() noexcept {
    detail::ThreadState& t = detail::tlsState;
    if (t.inCallback) return true;
    if (t.driverThread >= 0) [[likely]]
        return t.driverThread != 0;
    return detail::askDriverThread(t);
}

// Installs a check for "this thread is a driver's execution thread", so calls
// from kernels and host functions the driver runs are refused as well.
void setDeviceThreadProbe(int32_t (*probe)()) noexcept;

// Marks the current thread as running device work for its lifetime.
class DeviceCallbackScope {
public:
    DeviceCallbackScope() noexcept;
    ~DeviceCallbackScope();
    DeviceCallbackScope(const DeviceCallbackScope&) = delete;
    DeviceCallbackScope& operator=(const DeviceCallbackScope&) = delete;

private:
    bool previous_;
};

// Records "<call>: <detail>" as this thread's last error message.
void recordFailure(const char* call, mtiaError_t code, const char* detail) noexcept;

// Runs body (returning void or mtiaError_t) and returns its status.
// mtiaErrorNotReady is a status, not a failure: it leaves the message alone.
template <typename Body>
mtiaError_t apiCall(const char* call, Body&& body) noexcept {
    if (inDeviceCallback()) {
        recordFailure(call, mtiaErrorNotPermitted,
                      "called from a host function or kernel running on a device; the runtime may "
                      "not be re-entered there");
        return mtiaErrorNotPermitted;
    }
    try {
        if constexpr (std::is_same_v<decltype(body()), mtiaError_t>) {
            return body();
        } else {
            body();
            return mtiaSuccess;
        }
    } catch (const Error& e) {
        if (e.code() != mtiaErrorNotReady) recordFailure(call, e.code(), e.what());
        return e.code();
    } catch (const std::bad_alloc&) {
        recordFailure(call, mtiaErrorMemoryAllocation, "host memory exhausted");
        return mtiaErrorMemoryAllocation;
    } catch (const std::exception& e) {
        recordFailure(call, mtiaErrorUnknown, e.what());
        return mtiaErrorUnknown;
    } catch (...) {
        recordFailure(call, mtiaErrorUnknown, "unknown exception");
        return mtiaErrorUnknown;
    }
}

}  // namespace mtia
