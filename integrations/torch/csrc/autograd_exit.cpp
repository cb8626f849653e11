#include "autograd_exit.h"

#include "hooks.h"
#include "streams.h"

#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/Logging.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/utils/pybind.h>

namespace torch_mtia {

void drainAutogradThreads() noexcept {
    try {
        const MTIAHooks& hooks = MTIAHooks::get();
        const c10::DeviceIndex count = hooks.deviceCount();
        pybind11::gil_scoped_release release;  // the engine's threads may need the GIL meanwhile
        for (c10::DeviceIndex d = 0; d < count; ++d) {
            if (!hooks.hasPrimaryContext(d)) continue;  // no tensor there, no task to drain
            const c10::Device device(kDeviceType, d);
            const c10::DeviceGuard guard(device);
            at::Tensor leaf = at::ones({1}, at::TensorOptions().device(device));
            leaf.set_requires_grad(true);
            torch::autograd::backward({(leaf * 2).sum()});
        }
    } catch (const std::exception& e) {
        LOG(WARNING) << "torch_mtia: draining the autograd threads at exit failed: " << e.what();
    } catch (...) {
        LOG(WARNING) << "torch_mtia: draining the autograd threads at exit failed";
    }
}

}  // namespace torch_mtia
