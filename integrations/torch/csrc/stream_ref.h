// A stream as the Python side holds it, (runtime stream id, device index), and
// back: shared by python_module.cpp and python_guard_probe.cpp (one definition,
// so that the extension can be built as one translation unit).
#pragma once

#include "streams.h"

#include <c10/core/Device.h>
#include <c10/core/Stream.h>

#include <cstdint>
#include <utility>

namespace torch_mtia {

using StreamRef = std::pair<int64_t, int>;  // (runtime stream id, device index)

inline StreamRef ref(const c10::Stream& s) {
    return {s.id(), s.device_index()};
}

inline c10::Stream stream(const StreamRef& r) {
    return c10::Stream(c10::Stream::UNSAFE,
                       c10::Device(kDeviceType, static_cast<c10::DeviceIndex>(r.second)), r.first);
}

}  // namespace torch_mtia
