// Convolution on the device: the entries PyTorch 2.13 dispatches an MTIA convolution to,
// convolution_overrideable and convolution_backward_overrideable, for 1-, 2- and 3-d convolutions
// (stride, padding, dilation, groups, bias; the backward's output_mask), on the im2col + GEMM
// kernel of kernels/conv_kernels.cpp. at::_convolution has checked the shapes before either is
// called. float32, float64 and int64 run as they are; float16 and bfloat16 are widened to float32
// copies on the device and the results rounded once when copied back.
#include "../kernels/conv_params.h"
#include "device_kernels.h"
#include "tensor_args.h"

#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <tuple>

namespace torch_mtia {
namespace {

at::ScalarType computeType(at::ScalarType t) {
    return t == at::kDouble || t == at::kLong ? t : at::kFloat;
}

// The launch parameters of a convolution with input sizes inSizes (N, C, spatial...) and weight
// sizes (O, C / groups, kernel...), spatial dims right-aligned into 3.
mtiaTorchConv convParams(int32_t op, at::IntArrayRef inSizes, at::IntArrayRef weightSizes,
                         at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation,
                         int64_t groups, at::ScalarType type) {
    const int64_t dims = static_cast<int64_t>(inSizes.size()) - 2;
    TORCH_CHECK(dims >= 1 && dims <= 3, "torch_mtia: convolution of ", dims,
                " spatial dims: only 1, 2 and 3 have a device kernel");
    auto at = [&](at::IntArrayRef v, int64_t d) { return v.size() == 1 ? v[0] : v[d]; };
    mtiaTorchConv p{};
    p.op = op;
    p.dtype = kernelDtype(type);
    p.batch = inSizes[0];
    p.groups = groups;
    p.inChannels = inSizes[1];
    p.outChannels = weightSizes[0];
    p.chunks = 1;
    for (int64_t d = 0; d < 3; ++d) {
        p.inSize[d] = p.outSize[d] = p.kernel[d] = p.stride[d] = p.dilation[d] = 1;
    }
    for (int64_t d = 0; d < dims; ++d) {
        const int64_t slot = 3 - dims + d;
        p.inSize[slot] = inSizes[2 + d];
        p.kernel[slot] = weightSizes[2 + d];
        p.stride[slot] = at(stride, d);
        p.padding[slot] = at(padding, d);
        p.dilation[slot] = at(dilation, d);
        p.outSize[slot] =
            (p.inSize[slot] + 2 * p.padding[slot] - p.dilation[slot] * (p.kernel[slot] - 1) - 1) /
                p.stride[slot] +
            1;
        TORCH_CHECK(p.outSize[slot] > 0, "torch_mtia: convolution output size is too small");
    }
    return p;
}

void launch(mtiaTorchConv& p, const at::Tensor& input, const at::Tensor& weight,
            const at::Tensor& bias, const at::Tensor& output, uint64_t items) {
    p.input = reinterpret_cast<uint64_t>(input.data_ptr());
    p.weight = weight.defined() ? reinterpret_cast<uint64_t>(weight.data_ptr()) : 0;
    p.bias = bias.defined() ? reinterpret_cast<uint64_t>(bias.data_ptr()) : 0;
    p.output = reinterpret_cast<uint64_t>(output.data_ptr());
    static ModuleKernel kernel("mtia_torch_conv");
    const uint32_t blocks = static_cast<uint32_t>(std::clamp<uint64_t>(items, 1, 16));
    kernel.launch(p, mtiaDim3{blocks, 1, 1});
}

int64_t spatialVolume(const mtiaTorchConv& p, const int64_t* s) {
    (void)p;
    return s[0] * s[1] * s[2];
}

void checkCommon(const at::Tensor& input, const at::Tensor& weight, bool transposed,
                 const char* op) {
    TORCH_CHECK(!transposed, "torch_mtia: ", op,
                ": transposed convolution (conv_transpose1d/2d/3d) has no device kernel yet");
    TORCH_CHECK(input.device() == weight.device(),
                "Expected all tensors to be on the same device, "
                "but found ",
                input.device(), " and ", weight.device());
    TORCH_CHECK(input.scalar_type() == weight.scalar_type(), "Input type (", input.scalar_type(),
                ") and weight type (", weight.scalar_type(), ") should be the same");
    TORCH_CHECK((at::isFloatingType(input.scalar_type()) || input.scalar_type() == at::kLong) &&
                    kernelSupports(input.scalar_type()),
                "torch_mtia: ", op, " has no device kernel for ", input.scalar_type());
}

at::Tensor convolution(const at::Tensor& input, const at::Tensor& weight,
                       const c10::optional<at::Tensor>& biasOpt, c10::SymIntArrayRef stride,
                       c10::SymIntArrayRef padding, c10::SymIntArrayRef dilation, bool transposed,
                       c10::SymIntArrayRef /*outputPadding*/, c10::SymInt groups) {
    checkCommon(input, weight, transposed, "convolution");
    const c10::DeviceGuard guard(input.device());
    const at::ScalarType type = input.scalar_type(), ct = computeType(type);
    mtiaTorchConv p = convParams(mtiaTorchConvForward, input.sizes(), weight.sizes(),
                                 C10_AS_INTARRAYREF_SLOW(stride), C10_AS_INTARRAYREF_SLOW(padding),
                                 C10_AS_INTARRAYREF_SLOW(dilation), groups.expect_int(), ct);
    std::vector<int64_t> outSizes{p.batch, p.outChannels};
    const int64_t dims = input.dim() - 2;
    for (int64_t d = 0; d < dims; ++d) outSizes.push_back(p.outSize[3 - dims + d]);
    at::Tensor out = emptyDevice(outSizes, ct, input.device());
    if (out.numel() == 0) return type == ct ? out : out.to(type);
    at::Tensor bias =
        biasOpt && biasOpt->defined() ? contiguousOnDevice(*biasOpt, ct) : at::Tensor();
    // Output positions split into chunks so that a single image still spreads over the engines.
    const int64_t L = spatialVolume(p, p.outSize);
    const int64_t images = p.batch * p.groups;
    p.chunks =
        std::clamp<int64_t>(16 / std::max<int64_t>(images, 1), 1, std::max<int64_t>(L / 64, 1));
    launch(p, contiguousOnDevice(input, ct), contiguousOnDevice(weight, ct), bias, out,
           static_cast<uint64_t>(images * p.chunks));
    if (type == ct) return out;
    at::Tensor rounded = emptyDevice(outSizes, type, input.device());
    copyOnDevice(rounded, out);
    return rounded;
}

at::Tensor narrowed(const at::Tensor& t, at::ScalarType type) {
    if (t.scalar_type() == type) return t;
    at::Tensor r = emptyDevice(t.sizes(), type, t.device());
    copyOnDevice(r, t);
    return r;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor>
convolutionBackward(const at::Tensor& gradOutput, const at::Tensor& input, const at::Tensor& weight,
                    c10::SymIntArrayRef stride, c10::SymIntArrayRef padding,
                    c10::SymIntArrayRef dilation, bool transposed,
                    c10::SymIntArrayRef /*outputPadding*/, c10::SymInt groups,
                    std::array<bool, 3> outputMask) {
    checkCommon(input, weight, transposed, "convolution_backward");
    TORCH_CHECK(gradOutput.device() == input.device() &&
                    gradOutput.scalar_type() == input.scalar_type(),
                "torch_mtia: convolution_backward expects grad_output of the input's device and "
                "dtype");
    const c10::DeviceGuard guard(input.device());
    const at::ScalarType type = input.scalar_type(), ct = computeType(type);
    const at::IntArrayRef s = C10_AS_INTARRAYREF_SLOW(stride),
                          pd = C10_AS_INTARRAYREF_SLOW(padding),
                          dl = C10_AS_INTARRAYREF_SLOW(dilation);
    const int64_t g = groups.expect_int();
    const at::Tensor grad = contiguousOnDevice(gradOutput, ct);
    at::Tensor gradInput, gradWeight, gradBias;
    const bool empty = input.numel() == 0 || gradOutput.numel() == 0;
    if (outputMask[0]) {
        gradInput = emptyDevice(input.sizes(), ct, input.device());
        if (empty) {
            gradInput.zero_();
        } else {
            mtiaTorchConv p =
                convParams(mtiaTorchConvGradInput, input.sizes(), weight.sizes(), s, pd, dl, g, ct);
            launch(p, gradInput, contiguousOnDevice(weight, ct), at::Tensor(), grad,
                   static_cast<uint64_t>(p.batch * p.groups));
        }
        gradInput = narrowed(gradInput, type);
    }
    if (outputMask[1]) {
        gradWeight = emptyDevice(weight.sizes(), ct, weight.device());
        if (empty) {
            gradWeight.zero_();
        } else {
            mtiaTorchConv p = convParams(mtiaTorchConvGradWeight, input.sizes(), weight.sizes(), s,
                                         pd, dl, g, ct);
            const int64_t K = (p.inChannels / p.groups) * spatialVolume(p, p.kernel);
            p.chunks = std::clamp<int64_t>(16 / p.groups, 1, std::max<int64_t>(K / 16, 1));
            launch(p, contiguousOnDevice(input, ct), gradWeight, at::Tensor(), grad,
                   static_cast<uint64_t>(p.groups * p.chunks));
        }
        gradWeight = narrowed(gradWeight, type);
    }
    if (outputMask[2]) {
        gradBias = emptyDevice({weight.size(0)}, ct, weight.device());
        if (gradOutput.numel() == 0) {
            gradBias.zero_();
        } else {
            mtiaTorchConv p =
                convParams(mtiaTorchConvGradBias, input.sizes(), weight.sizes(), s, pd, dl, g, ct);
            launch(p, grad, at::Tensor(), gradBias, grad, static_cast<uint64_t>(p.outChannels));
        }
        gradBias = narrowed(gradBias, type);
    }
    return {gradInput, gradWeight, gradBias};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, MTIA, m) {
    m.impl("convolution_overrideable", TORCH_FN(convolution));
    m.impl("convolution_backward_overrideable", TORCH_FN(convolutionBackward));
}

}  // namespace torch_mtia
