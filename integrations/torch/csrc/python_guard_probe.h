// torch_mtia._C's test bindings over the DeviceGuardImplInterface registered for PrivateUse1.
#pragma once

#include <torch/extension.h>

namespace torch_mtia {

// Adds _guard_* functions and the _GuardEvent class to m (python_guard_probe.cpp).
void addGuardProbe(pybind11::module_& m);

}  // namespace torch_mtia
