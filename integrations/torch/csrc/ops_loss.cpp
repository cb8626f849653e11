// The negative log likelihood loss on the device (nll_loss and nll_loss2d, forward and backward;
// kernels/loss_kernels.cpp), so that F.cross_entropy (log_softmax + nll_loss) and its backward
// stay on the device. The total weight stays on the device too: the backward's kernel reads it.
#include "device_kernels.h"
#include "tensor_args.h"

#include "../kernels/loss_params.h"

#include <ATen/Functions.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <tuple>

namespace torch_mtia::loss_ops {
namespace {

const at::Tensor& orUndefined(const std::optional<at::Tensor>& t) {
    static const at::Tensor undefined;
    return t && t->defined() ? *t : undefined;
}

void checkTarget(const at::Tensor& target) {
    TORCH_CHECK(target.scalar_type() == at::kLong || target.scalar_type() == at::kByte,
                "expected target dtype to be Long or Byte, but got ", target.scalar_type());
}

// The (batch, classes, spatial) geometry of nll_loss (spatial 1) and nll_loss2d, after the CPU's
// checks.
struct Geometry {
    int64_t batch, classes, spatial;
};

Geometry nllGeometry(const at::Tensor& self, const at::Tensor& target, const at::Tensor& weight) {
    TORCH_CHECK(self.dim() > 0 && self.dim() <= 2, "input tensor should be 1D or 2D");
    TORCH_CHECK(target.dim() <= 1, "0D or 1D target tensor expected, multi-target not supported");
    const bool noBatch = self.dim() == 1 && target.dim() == 0;
    TORCH_CHECK(noBatch || self.size(0) == target.size(0), "Expected input batch_size (",
                self.size(0), ") to match target batch_size (", target.size(0), ")");
    const int64_t classes = self.size(-1);
    TORCH_CHECK(!weight.defined() || (weight.dim() <= 1 && weight.numel() == classes),
                "weight tensor should be defined either for all ", classes,
                " classes or no classes but got weight tensor of shape: ", weight.sizes());
    return {self.dim() == 2 ? self.size(0) : 1, classes, 1};
}

Geometry nll2dGeometry(const at::Tensor& self, const at::Tensor& target, const at::Tensor& weight) {
    TORCH_CHECK(target.dim() == 3,
                "only batches of spatial targets supported (3D tensors) but got ",
                "targets of dimension: ", target.dim());
    TORCH_CHECK(self.dim() == 4, "only batches of spatial inputs supported (4D tensors), but got ",
                "input of dimension: ", self.dim());
    TORCH_CHECK(!weight.defined() || weight.numel() == self.size(1),
                "weight tensor should be defined either for all or no classes");
    TORCH_CHECK(self.size(0) == target.size(0) && self.size(2) == target.size(1) &&
                    self.size(3) == target.size(2),
                "input and target batch or spatial sizes don't match: target ", target.sizes(),
                ", input ", self.sizes());
    return {self.size(0), self.size(1), self.size(2) * self.size(3)};
}

mtiaTorchNllLoss nllParams(const Geometry& g, const at::Tensor& self, const at::Tensor& target,
                           const at::Tensor& weight, int64_t reduction, int64_t ignoreIndex) {
    TORCH_CHECK(reduction >= 0 && reduction <= 2, "nll_loss: unknown reduction ", reduction);
    TORCH_CHECK(at::isFloatingType(self.scalar_type()) && kernelSupports(self.scalar_type()),
                "\"nll_loss\" not implemented for '", self.scalar_type(), "'");
    mtiaTorchNllLoss p{};
    p.reduction = static_cast<int32_t>(reduction);
    p.batch = g.batch;
    p.classes = g.classes;
    p.spatial = g.spatial;
    p.ignoreIndex = ignoreIndex;
    p.input = reinterpret_cast<uint64_t>(self.data_ptr());
    p.inDtype = kernelDtype(self.scalar_type());
    p.target = reinterpret_cast<uint64_t>(target.data_ptr());
    p.targetDtype = kernelDtype(target.scalar_type());
    if (weight.defined()) {
        p.weight = reinterpret_cast<uint64_t>(weight.data_ptr());
        p.wDtype = kernelDtype(weight.scalar_type());
    }
    return p;
}

void launchNll(const mtiaTorchNllLoss& p, bool reduced) {
    static ModuleKernel kernel("mtia_torch_nll_loss");
    kernel.launch(p, reduced ? mtiaDim3{1, 1, 1}
                             : gridFor(static_cast<uint64_t>(p.batch * p.spatial * p.classes)));
}

std::tuple<at::Tensor, at::Tensor> nllForward(const at::Tensor& selfIn, const at::Tensor& targetIn,
                                              const at::Tensor& weightIn, int64_t reduction,
                                              int64_t ignoreIndex, bool twoD) {
    const c10::DeviceGuard guard(selfIn.device());
    checkTarget(targetIn);
    const Geometry g =
        twoD ? nll2dGeometry(selfIn, targetIn, weightIn) : nllGeometry(selfIn, targetIn, weightIn);
    const at::Tensor self = contiguousOnDevice(selfIn, selfIn.scalar_type());
    const at::Tensor target = contiguousOnDevice(targetIn, targetIn.scalar_type());
    const at::Tensor weight =
        weightIn.defined() ? contiguousOnDevice(weightIn, self.scalar_type()) : weightIn;
    mtiaTorchNllLoss p = nllParams(g, self, target, weight, reduction, ignoreIndex);
    const bool none = reduction == mtiaTorchReductionNone;
    std::vector<int64_t> outShape;
    if (none && twoD) outShape = {g.batch, selfIn.size(2), selfIn.size(3)};
    if (none && !twoD && selfIn.dim() == 2) outShape = {g.batch};
    at::Tensor out = emptyDevice(outShape, self.scalar_type(), self.device());
    at::Tensor totalWeight = emptyDevice({}, self.scalar_type(), self.device());
    p.out = reinterpret_cast<uint64_t>(out.data_ptr());
    p.outDtype = kernelDtype(out.scalar_type());
    p.totalWeight = reinterpret_cast<uint64_t>(totalWeight.data_ptr());
    p.twDtype = p.outDtype;
    if (none) {
        totalWeight.zero_();
        if (out.numel() > 0) launchNll(p, false);
    } else {
        launchNll(p, true);  // writes the loss and the total, NaN for a mean of nothing
    }
    return {out, totalWeight};
}

at::Tensor nllBackward(const at::Tensor& gradOutIn, const at::Tensor& selfIn,
                       const at::Tensor& targetIn, const at::Tensor& weightIn, int64_t reduction,
                       int64_t ignoreIndex, const at::Tensor& totalWeight, bool twoD) {
    const c10::DeviceGuard guard(selfIn.device());
    checkTarget(targetIn);
    const Geometry g =
        twoD ? nll2dGeometry(selfIn, targetIn, weightIn) : nllGeometry(selfIn, targetIn, weightIn);
    TORCH_CHECK(totalWeight.numel() == 1, "expected total_weight to be a single element tensor, ",
                "got: ", totalWeight.sizes(), " (", totalWeight.numel(), " elements)");
    // The kernel reads every operand in place: one on another device would fault the device.
    for (const at::Tensor* t : {&gradOutIn, &targetIn, &weightIn, &totalWeight}) {
        TORCH_CHECK(!t->defined() || t->device() == selfIn.device(),
                    "Expected all tensors to be on the same device, but found at least two "
                    "devices, ",
                    selfIn.device(), " and ", t->device(), "! (nll_loss_backward)");
    }
    const bool none = reduction == mtiaTorchReductionNone;
    TORCH_CHECK(!none || gradOutIn.numel() == g.batch * g.spatial,
                "nll_loss_backward: grad_output of ", gradOutIn.numel(), " elements for ",
                g.batch * g.spatial, " targets");
    TORCH_CHECK(none || gradOutIn.numel() == 1, "Expected a single element grad_output tensor, ",
                "but got: ", gradOutIn.sizes());
    const at::Tensor self = contiguousOnDevice(selfIn, selfIn.scalar_type());
    const at::Tensor target = contiguousOnDevice(targetIn, targetIn.scalar_type());
    const at::Tensor weight =
        weightIn.defined() ? contiguousOnDevice(weightIn, self.scalar_type()) : weightIn;
    const at::Tensor gradOut = contiguousOnDevice(gradOutIn, gradOutIn.scalar_type());
    at::Tensor gradInput = emptyDevice(selfIn.sizes(), selfIn.scalar_type(), selfIn.device());
    if (gradInput.numel() == 0) return gradInput;
    mtiaTorchNllLoss p = nllParams(g, self, target, weight, reduction, ignoreIndex);
    p.backward = 1;
    p.gradInput = reinterpret_cast<uint64_t>(gradInput.data_ptr());
    p.outDtype = kernelDtype(gradInput.scalar_type());
    p.gradOut = reinterpret_cast<uint64_t>(gradOut.data_ptr());
    p.gDtype = kernelDtype(gradOut.scalar_type());
    p.totalWeight = reinterpret_cast<uint64_t>(totalWeight.data_ptr());
    p.twDtype = kernelDtype(totalWeight.scalar_type());
    launchNll(p, false);
    return gradInput;
}

std::tuple<at::Tensor, at::Tensor> nllLossForward(const at::Tensor& self, const at::Tensor& target,
                                                  const std::optional<at::Tensor>& weight,
                                                  int64_t reduction, int64_t ignoreIndex) {
    return nllForward(self, target, orUndefined(weight), reduction, ignoreIndex, false);
}
std::tuple<at::Tensor, at::Tensor> nllLoss2dForward(const at::Tensor& self,
                                                    const at::Tensor& target,
                                                    const std::optional<at::Tensor>& weight,
                                                    int64_t reduction, int64_t ignoreIndex) {
    return nllForward(self, target, orUndefined(weight), reduction, ignoreIndex, true);
}
at::Tensor nllLossBackward(const at::Tensor& gradOut, const at::Tensor& self,
                           const at::Tensor& target, const std::optional<at::Tensor>& weight,
                           int64_t reduction, int64_t ignoreIndex, const at::Tensor& totalWeight) {
    return nllBackward(gradOut, self, target, orUndefined(weight), reduction, ignoreIndex,
                       totalWeight, false);
}
at::Tensor nllLoss2dBackward(const at::Tensor& gradOut, const at::Tensor& self,
                             const at::Tensor& target, const std::optional<at::Tensor>& weight,
                             int64_t reduction, int64_t ignoreIndex,
                             const at::Tensor& totalWeight) {
    return nllBackward(gradOut, self, target, orUndefined(weight), reduction, ignoreIndex,
                       totalWeight, true);
}

}  // namespace
}  // namespace torch_mtia::loss_ops

namespace torch_mtia::loss_ops {
TORCH_LIBRARY_IMPL(aten, MTIA, m) {
    m.impl("nll_loss_forward", TORCH_FN(nllLossForward));
    m.impl("nll_loss_backward", TORCH_FN(nllLossBackward));
    m.impl("nll_loss2d_forward", TORCH_FN(nllLoss2dForward));
    m.impl("nll_loss2d_backward", TORCH_FN(nllLoss2dBackward));
}
}  // namespace torch_mtia::loss_ops
