#include "dist_python.h"

#include "dist_backend.h"

#include <pybind11/chrono.h>

namespace torch_mtia::dist {

void bindDistributed(pybind11::module& m) {
    namespace py = pybind11;
    py::module_::import("torch._C._distributed_c10d");
    // A C++ base (not a Python one): pybind11 then converts an _MtiaBackend to
    // intrusive_ptr<c10d::Backend> where ProcessGroup._register_backend takes one.
    py::class_<MtiaBackend, c10d::Backend, c10::intrusive_ptr<MtiaBackend>>(m, "_MtiaBackend");
    m.def(
        "_dist_create_backend",
        [](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
           std::chrono::milliseconds timeout) {
            return c10::make_intrusive<MtiaBackend>(store, rank, size, timeout);
        },
        py::arg("store"), py::arg("rank"), py::arg("world_size"), py::arg("timeout"),
        // Construction waits for the other ranks at the store (the group's path is decided there)
        // and may create a gloo backend, which takes the GIL itself.
        py::call_guard<py::gil_scoped_release>(),
        "The creator of the mtia c10d backend (torch.distributed.Backend.register_backend's "
        "func): store is the group's store, timeout a datetime.timedelta.");
}

}  // namespace torch_mtia::dist
