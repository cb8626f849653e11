// 2-d pooling on the device, forward and backward (kernels/pool_kernels.cpp):
// max_pool2d_with_indices, avg_pool2d and _adaptive_avg_pool2d with their backwards and out=
// forms. F.max_pool2d and nn.MaxPool2d reach max_pool2d_with_indices through the composite
// max_pool2d; F.adaptive_avg_pool2d reaches _adaptive_avg_pool2d, except for a 1x1 output, which
// PyTorch computes as mean over the last two dims (a reduction, not ours). Inputs are 3-d (C, H, W)
// or 4-d (N, C, H, W); non-contiguous ones (channels-last included) are read through a contiguous
// copy on the device.
#include "../kernels/pool_params.h"
#include "device_kernels.h"
#include "tensor_args.h"

#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <tuple>

namespace torch_mtia {
namespace {

int64_t floorDiv(int64_t a, int64_t b) {
    const int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

// PyTorch's pooling output size: ceil mode adds a last window that starts inside the input or its
// left padding.
int64_t pooledSize(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dilation,
                   bool ceil) {
    int64_t out =
        floorDiv(in + 2 * pad - dilation * (k - 1) - 1 + (ceil ? stride - 1 : 0), stride) + 1;
    if (ceil && (out - 1) * stride >= in + pad) --out;
    return out;
}

// One or two ints, as the CPU accepts them; def when empty (stride: the kernel size).
std::pair<int64_t, int64_t> pair(at::IntArrayRef v, const char* op, const char* what,
                                 std::pair<int64_t, int64_t> def, bool emptyOk) {
    TORCH_CHECK(v.size() == 1 || v.size() == 2 || (emptyOk && v.empty()), op, ": ", what,
                " must either be ", emptyOk ? "omitted, " : "",
                "a single int, or a tuple of two ints");
    if (v.empty()) return def;
    return {v[0], v.size() == 1 ? v[0] : v[1]};
}

// Which dtypes an operator takes, as on the CPU: floating ones, and max pooling every integer type,
// average pooling int64.
enum class Ints { None, Int64, All };

void checkInput(const at::Tensor& self, const char* op, Ints ints) {
    const int64_t dim = self.dim();
    bool ok = dim == 3 || dim == 4;
    for (int64_t d = dim - 3; ok && d < dim; ++d) ok = self.size(d) != 0;
    TORCH_CHECK(ok, op, ": non-empty 3D or 4D (batch mode) tensor expected for input, got ",
                self.sizes());
    const at::ScalarType t = self.scalar_type();
    const bool intOk = ints == Ints::All ? at::isIntegralType(t, /*includeBool=*/false)
                                         : ints == Ints::Int64 && t == at::kLong;
    TORCH_CHECK((at::isFloatingType(t) || intOk) && kernelSupports(t), "\"", op,
                "\" not implemented for '", c10::toString(self.scalar_type()), "'");
}

struct Pooling {
    mtiaTorchPool2d p{};
    std::vector<int64_t> outSizes;
};

Pooling geometry(const at::Tensor& self, int32_t op, at::IntArrayRef kernel, at::IntArrayRef stride,
                 at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil, const char* name) {
    checkInput(self, name, op <= mtiaTorchPoolMaxBackward ? Ints::All : Ints::Int64);
    const auto [kH, kW] = pair(kernel, name, "kernel_size", {0, 0}, false);
    const auto [sH, sW] = pair(stride, name, "stride", {kH, kW}, true);
    const auto [pH, pW] = pair(padding, name, "padding", {0, 0}, false);
    const auto [dH, dW] = pair(dilation, name, "dilation", {1, 1}, false);
    TORCH_CHECK(kH > 0 && kW > 0, "kernel size should be greater than zero, but got kH: ", kH,
                " kW: ", kW);
    TORCH_CHECK(sH > 0 && sW > 0, "stride should be greater than zero, but got dH: ", sH,
                " dW: ", sW);
    TORCH_CHECK(dH > 0 && dW > 0, "dilation should be greater than zero, but got dilationH: ", dH,
                " dilationW: ", dW);
    if (op == mtiaTorchPoolMax) {
        TORCH_CHECK(pH >= 0 && pW >= 0 && pH <= ((kH - 1) * dH + 1) / 2 &&
                        pW <= ((kW - 1) * dW + 1) / 2,
                    "pad should be at most half of effective kernel size, but got pad=", pH,
                    ", kernel_size=", kH, " and dilation=", dH);
    } else {
        TORCH_CHECK(pH >= 0 && pW >= 0 && pH <= kH / 2 && pW <= kW / 2,
                    "pad should be smaller than or equal to half of kernel size, but got padW = ",
                    pW, ", padH = ", pH, ", kW = ", kW, ", kH = ", kH);
    }
    const int64_t inH = self.size(-2), inW = self.size(-1);
    const int64_t outH = pooledSize(inH, kH, pH, sH, dH, ceil);
    const int64_t outW = pooledSize(inW, kW, pW, sW, dW, ceil);
    TORCH_CHECK(outH >= 1 && outW >= 1, "Given input size: (", self.size(-3), "x", inH, "x", inW,
                "). Calculated output size: (", self.size(-3), "x", outH, "x", outW,
                "). Output size is too small");
    Pooling g;
    g.p.op = op;
    g.p.dtype = kernelDtype(self.scalar_type());
    g.p.planes = self.numel() / (inH * inW);
    g.p.inH = inH;
    g.p.inW = inW;
    g.p.outH = outH;
    g.p.outW = outW;
    g.p.kH = kH;
    g.p.kW = kW;
    g.p.sH = sH;
    g.p.sW = sW;
    g.p.pH = pH;
    g.p.pW = pW;
    g.p.dH = dH;
    g.p.dW = dW;
    g.outSizes.assign(self.sizes().begin(), self.sizes().end() - 2);
    g.outSizes.push_back(outH);
    g.outSizes.push_back(outW);
    return g;
}

void launch(mtiaTorchPool2d& p, const at::Tensor& input, const at::Tensor& output,
            const at::Tensor& indices) {
    if (p.planes == 0) return;
    p.input = reinterpret_cast<uint64_t>(input.data_ptr());
    p.output = reinterpret_cast<uint64_t>(output.data_ptr());
    p.indices = indices.defined() ? reinterpret_cast<uint64_t>(indices.data_ptr()) : 0;
    static ModuleKernel kernel("mtia_torch_pool2d");
    const uint64_t work =
        static_cast<uint64_t>(p.planes * std::max(p.inH * p.inW, p.outH * p.outW));
    mtiaDim3 grid = gridFor(work);
    grid.x = std::min<uint32_t>(grid.x, static_cast<uint32_t>(p.planes));
    kernel.launch(p, grid);
}

// Writes result into out (resized to result's sizes), copying when out is not result itself.
at::Tensor& into(at::Tensor& out, const at::Tensor& result) {
    TORCH_CHECK(out.scalar_type() == result.scalar_type(), "Expected out tensor to have dtype ",
                result.scalar_type(), ", but got ", out.scalar_type(), " instead");
    at::native::resize_output(out, result.sizes());
    if (!out.is_same(result)) copyOnDevice(out, result);
    return out;
}

// Contiguous out of the right size and dtype is written directly; anything else through a
// temporary.
bool writable(const at::Tensor& out, at::IntArrayRef sizes, at::ScalarType type) {
    return out.sizes() == sizes && out.scalar_type() == type && out.is_contiguous();
}

std::tuple<at::Tensor&, at::Tensor&> maxPoolOut(const at::Tensor& self, at::IntArrayRef kernel,
                                                at::IntArrayRef stride, at::IntArrayRef padding,
                                                at::IntArrayRef dilation, bool ceil,
                                                at::Tensor& out, at::Tensor& indices) {
    const c10::DeviceGuard guard(self.device());
    Pooling g =
        geometry(self, mtiaTorchPoolMax, kernel, stride, padding, dilation, ceil, "max_pool2d");
    TORCH_CHECK(indices.scalar_type() == at::kLong,
                "max_pool2d_with_indices: indices must be int64, got ", indices.scalar_type());
    at::Tensor o = writable(out, g.outSizes, self.scalar_type())
                       ? out
                       : emptyDevice(g.outSizes, self.scalar_type(), self.device());
    at::Tensor i = writable(indices, g.outSizes, at::kLong)
                       ? indices
                       : emptyDevice(g.outSizes, at::kLong, self.device());
    launch(g.p, contiguousOnDevice(self, self.scalar_type()), o, i);
    into(out, o);
    into(indices, i);
    return {out, indices};
}

std::tuple<at::Tensor, at::Tensor> maxPool(const at::Tensor& self, at::IntArrayRef kernel,
                                           at::IntArrayRef stride, at::IntArrayRef padding,
                                           at::IntArrayRef dilation, bool ceil) {
    const c10::DeviceGuard guard(self.device());
    Pooling g =
        geometry(self, mtiaTorchPoolMax, kernel, stride, padding, dilation, ceil, "max_pool2d");
    at::Tensor out = emptyDevice(g.outSizes, self.scalar_type(), self.device());
    at::Tensor indices = emptyDevice(g.outSizes, at::kLong, self.device());
    launch(g.p, contiguousOnDevice(self, self.scalar_type()), out, indices);
    return {out, indices};
}

void checkGrad(const at::Tensor& grad, const std::vector<int64_t>& sizes, const char* op) {
    TORCH_CHECK(grad.sizes() == at::IntArrayRef(sizes), op, ": grad_output of sizes ", grad.sizes(),
                " does not match the output's ", at::IntArrayRef(sizes));
}

at::Tensor& maxPoolBackwardOut(const at::Tensor& gradOutput, const at::Tensor& self,
                               at::IntArrayRef kernel, at::IntArrayRef stride,
                               at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil,
                               const at::Tensor& indices, at::Tensor& gradInput) {
    const c10::DeviceGuard guard(self.device());
    Pooling g = geometry(self, mtiaTorchPoolMaxBackward, kernel, stride, padding, dilation, ceil,
                         "max_pool2d_with_indices_backward");
    checkGrad(gradOutput, g.outSizes, "max_pool2d_with_indices_backward");
    checkGrad(indices, g.outSizes, "max_pool2d_with_indices_backward (indices)");
    at::Tensor gi = writable(gradInput, self.sizes(), self.scalar_type())
                        ? gradInput
                        : emptyDevice(self.sizes(), self.scalar_type(), self.device());
    launch(g.p, gi, contiguousOnDevice(gradOutput, self.scalar_type()),
           contiguousOnDevice(indices, at::kLong));
    return into(gradInput, gi);
}

at::Tensor maxPoolBackward(const at::Tensor& gradOutput, const at::Tensor& self,
                           at::IntArrayRef kernel, at::IntArrayRef stride, at::IntArrayRef padding,
                           at::IntArrayRef dilation, bool ceil, const at::Tensor& indices) {
    const c10::DeviceGuard guard(self.device());
    at::Tensor gradInput = emptyDevice(self.sizes(), self.scalar_type(), self.device());
    return maxPoolBackwardOut(gradOutput, self, kernel, stride, padding, dilation, ceil, indices,
                              gradInput);
}

Pooling avgGeometry(const at::Tensor& self, int32_t op, at::IntArrayRef kernel,
                    at::IntArrayRef stride, at::IntArrayRef padding, bool ceil,
                    bool countIncludePad, c10::optional<int64_t> divisor) {
    TORCH_CHECK(!divisor || *divisor != 0, "divisor must be not zero");
    Pooling g = geometry(self, op, kernel, stride, padding, {1}, ceil, "avg_pool2d");
    g.p.countIncludePad = countIncludePad ? 1 : 0;
    g.p.divisorOverride = divisor ? *divisor : 0;
    return g;
}

at::Tensor& avgPoolOut(const at::Tensor& self, at::IntArrayRef kernel, at::IntArrayRef stride,
                       at::IntArrayRef padding, bool ceil, bool countIncludePad,
                       c10::optional<int64_t> divisor, at::Tensor& out) {
    const c10::DeviceGuard guard(self.device());
    Pooling g = avgGeometry(self, mtiaTorchPoolAvg, kernel, stride, padding, ceil, countIncludePad,
                            divisor);
    at::Tensor o = writable(out, g.outSizes, self.scalar_type())
                       ? out
                       : emptyDevice(g.outSizes, self.scalar_type(), self.device());
    launch(g.p, contiguousOnDevice(self, self.scalar_type()), o, at::Tensor());
    return into(out, o);
}

at::Tensor avgPool(const at::Tensor& self, at::IntArrayRef kernel, at::IntArrayRef stride,
                   at::IntArrayRef padding, bool ceil, bool countIncludePad,
                   c10::optional<int64_t> divisor) {
    const c10::DeviceGuard guard(self.device());
    Pooling g = avgGeometry(self, mtiaTorchPoolAvg, kernel, stride, padding, ceil, countIncludePad,
                            divisor);
    at::Tensor out = emptyDevice(g.outSizes, self.scalar_type(), self.device());
    launch(g.p, contiguousOnDevice(self, self.scalar_type()), out, at::Tensor());
    return out;
}

at::Tensor& avgPoolBackwardOut(const at::Tensor& gradOutput, const at::Tensor& self,
                               at::IntArrayRef kernel, at::IntArrayRef stride,
                               at::IntArrayRef padding, bool ceil, bool countIncludePad,
                               c10::optional<int64_t> divisor, at::Tensor& gradInput) {
    const c10::DeviceGuard guard(self.device());
    Pooling g = avgGeometry(self, mtiaTorchPoolAvgBackward, kernel, stride, padding, ceil,
                            countIncludePad, divisor);
    checkGrad(gradOutput, g.outSizes, "avg_pool2d_backward");
    at::Tensor gi = writable(gradInput, self.sizes(), self.scalar_type())
                        ? gradInput
                        : emptyDevice(self.sizes(), self.scalar_type(), self.device());
    launch(g.p, gi, contiguousOnDevice(gradOutput, self.scalar_type()), at::Tensor());
    return into(gradInput, gi);
}

at::Tensor avgPoolBackward(const at::Tensor& gradOutput, const at::Tensor& self,
                           at::IntArrayRef kernel, at::IntArrayRef stride, at::IntArrayRef padding,
                           bool ceil, bool countIncludePad, c10::optional<int64_t> divisor) {
    const c10::DeviceGuard guard(self.device());
    at::Tensor gradInput = emptyDevice(self.sizes(), self.scalar_type(), self.device());
    return avgPoolBackwardOut(gradOutput, self, kernel, stride, padding, ceil, countIncludePad,
                              divisor, gradInput);
}

Pooling adaptiveGeometry(const at::Tensor& self, int32_t op, at::IntArrayRef outputSize) {
    TORCH_CHECK(outputSize.size() == 2, "adaptive_avg_pool2d: output_size must be 2");
    TORCH_CHECK(outputSize[0] >= 0 && outputSize[1] >= 0,
                "adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 ",
                "but received {", outputSize[0], ", ", outputSize[1], "}");
    checkInput(self, "adaptive_avg_pool2d", Ints::None);
    Pooling g;
    g.p.op = op;
    g.p.dtype = kernelDtype(self.scalar_type());
    g.p.inH = self.size(-2);
    g.p.inW = self.size(-1);
    g.p.planes = self.numel() / (g.p.inH * g.p.inW);
    g.p.outH = outputSize[0];
    g.p.outW = outputSize[1];
    g.p.kH = g.p.kW = g.p.sH = g.p.sW = g.p.dH = g.p.dW = 1;
    g.outSizes.assign(self.sizes().begin(), self.sizes().end() - 2);
    g.outSizes.push_back(outputSize[0]);
    g.outSizes.push_back(outputSize[1]);
    if (g.p.outH == 0 || g.p.outW == 0) g.p.planes = 0;  // nothing to compute
    return g;
}

at::Tensor adaptiveAvgPool(const at::Tensor& self, c10::SymIntArrayRef outputSize) {
    const c10::DeviceGuard guard(self.device());
    Pooling g =
        adaptiveGeometry(self, mtiaTorchPoolAdaptiveAvg, C10_AS_INTARRAYREF_SLOW(outputSize));
    at::Tensor out = emptyDevice(g.outSizes, self.scalar_type(), self.device());
    launch(g.p, contiguousOnDevice(self, self.scalar_type()), out, at::Tensor());
    return out;
}

at::Tensor& adaptiveAvgPoolOut(const at::Tensor& self, c10::SymIntArrayRef outputSize,
                               at::Tensor& out) {
    return into(out, adaptiveAvgPool(self, outputSize));
}

at::Tensor adaptiveAvgPoolBackward(const at::Tensor& gradOutput, const at::Tensor& self) {
    const c10::DeviceGuard guard(self.device());
    TORCH_CHECK(gradOutput.dim() == self.dim(), "adaptive_avg_pool2d_backward: grad_output of ",
                gradOutput.dim(), " dims for an input of ", self.dim());
    Pooling g = adaptiveGeometry(self, mtiaTorchPoolAdaptiveAvgBackward,
                                 {gradOutput.size(-2), gradOutput.size(-1)});
    checkGrad(gradOutput, g.outSizes, "adaptive_avg_pool2d_backward");
    at::Tensor gradInput = emptyDevice(self.sizes(), self.scalar_type(), self.device());
    if (g.p.planes == 0) return gradInput.zero_();
    launch(g.p, gradInput, contiguousOnDevice(gradOutput, self.scalar_type()), at::Tensor());
    return gradInput;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, MTIA, m) {
    m.impl("max_pool2d_with_indices", TORCH_FN(maxPool));
    m.impl("max_pool2d_with_indices.out", TORCH_FN(maxPoolOut));
    m.impl("max_pool2d_with_indices_backward", TORCH_FN(maxPoolBackward));
    m.impl("max_pool2d_with_indices_backward.grad_input", TORCH_FN(maxPoolBackwardOut));
    m.impl("avg_pool2d", TORCH_FN(avgPool));
    m.impl("avg_pool2d.out", TORCH_FN(avgPoolOut));
    m.impl("avg_pool2d_backward", TORCH_FN(avgPoolBackward));
    m.impl("avg_pool2d_backward.grad_input", TORCH_FN(avgPoolBackwardOut));
    m.impl("_adaptive_avg_pool2d", TORCH_FN(adaptiveAvgPool));
    m.impl("adaptive_avg_pool2d.out", TORCH_FN(adaptiveAvgPoolOut));
    m.impl("_adaptive_avg_pool2d_backward", TORCH_FN(adaptiveAvgPoolBackward));
}

}  // namespace torch_mtia
