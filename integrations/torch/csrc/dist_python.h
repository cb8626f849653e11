// torch_mtia._C's part for torch_mtia.distributed.
#pragma once

#include <torch/csrc/utils/pybind.h>

namespace torch_mtia::dist {

// Adds _MtiaBackend (a subclass of torch._C._distributed_c10d.Backend, held by c10::intrusive_ptr
// as PyTorch holds its backends) and _dist_create_backend(store, rank, world_size, timeout), the
// creator that torch.distributed.Backend.register_backend calls. Imports
// torch._C._distributed_c10d first: pybind11 must know c10d::Backend and c10d::Store (registered
// by libtorch_python) before a class can derive from it or a function take one.
void bindDistributed(pybind11::module& m);

}  // namespace torch_mtia::dist
