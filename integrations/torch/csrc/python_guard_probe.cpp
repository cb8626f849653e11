// Test bindings that drive the device guard (guard.cpp) the way PyTorch's own code does: through
// c10::impl::getDeviceGuardImpl(PrivateUse1), c10::Event and c10::StreamGuard, rather than through
// torch_mtia's direct bindings. Streams travel as (runtime stream id, device index) pairs, as in
// python_module.cpp. Not part of torch_mtia's public API (names start with an underscore).
#include "python_guard_probe.h"

#include "stream_ref.h"
#include "streams.h"

#include <c10/core/Event.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <memory>

namespace py = pybind11;

namespace torch_mtia {
namespace {

const c10::impl::DeviceGuardImplInterface* guard() {
    return c10::impl::getDeviceGuardImpl(kDeviceType);
}

c10::Device device(int index) {
    return c10::Device(kDeviceType, static_cast<c10::DeviceIndex>(index));
}

}  // namespace

void addGuardProbe(py::module_& m) {
    m.def("_guard_get_stream", [](int d) { return ref(guard()->getStream(device(d))); });
    m.def("_guard_pool_stream",
          [](int d, bool high) { return ref(guard()->getStreamFromGlobalPool(device(d), high)); });
    m.def("_guard_exchange_stream",
          [](const StreamRef& s) { return ref(guard()->exchangeStream(stream(s))); });
    // The current stream inside a c10::StreamGuard of s.
    m.def("_guard_current_inside_stream_guard", [](const StreamRef& s) {
        const c10::StreamGuard scope(stream(s));
        return ref(guard()->getStream(device(s.second)));
    });
    m.def("_guard_record_data_ptr", [](const at::Tensor& t, const StreamRef& s) {
        guard()->recordDataPtrOnStream(t.storage().data_ptr(), stream(s));
    });
    // A c10::Event of PrivateUse1: record/block/query reach GuardImpl::record/block/queryEvent.
    py::class_<c10::Event>(m, "_GuardEvent")
        .def(py::init([] { return std::make_unique<c10::Event>(kDeviceType); }))
        .def("record", [](c10::Event& e, const StreamRef& s) { e.record(stream(s)); })
        .def("block", [](c10::Event& e, const StreamRef& s) { e.block(stream(s)); })
        .def("query", [](const c10::Event& e) { return e.query(); })
        .def_property_readonly("was_marked_for_recording", &c10::Event::was_marked_for_recording);
}

}  // namespace torch_mtia
