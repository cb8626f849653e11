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

// Multiply-adds of the convolution p describes (its forward's, which each gradient matches).
uint64_t macsOf(const mtiaTorchConv& p) {
    const int64_t cg = p.inChannels / p.groups;
    return static_cast<uint64_t>(p.batch * p.outChannels * cg) *
           static_cast<uint64_t>(p.outSize[0] * p.outSize[1] * p.outSize[2]) *
           static_cast<uint64_t>(p.kernel[0] * p.kernel[1] * p.kernel[2]);
}

// Blocks for a launch: about one per 2^20 multiply-adds, at most 16 and at most one per item. A
// block has a fixed cost (its column-matrix setup), and the engines run a small launch's blocks
// one after another, so small convolutions take one block.
uint64_t blocksFor(const mtiaTorchConv& p, uint64_t items) {
    return std::clamp<uint64_t>(macsOf(p) >> 20, 1,
                                std::min<uint64_t>(16, std::max<uint64_t>(items, 1)));
}

void launch(mtiaTorchConv& p, const at::Tensor& input, const at::Tensor& weight,
            const at::Tensor& bias, const at::Tensor& output, uint64_t items) {
    p.input = reinterpret_cast<uint64_t>(input.data_ptr());
    p.weight = weight.defined() ? reinterpret_cast<uint64_t>(weight.data_ptr()) : 0;
    p.bias = bias.defined() ? reinterpret_cast<uint64_t>(bias.data_ptr()) : 0;
    p.output = reinterpret_cast<uint64_t>(output.data_ptr());
    static ModuleKernel kernel("mtia_torch_conv");
    const auto blocks = static_cast<uint32_t>(blocksFor(p, items));
    kernel.launch(p, mtiaDim3{blocks, 1, 1});
}

int64_t spatialVolume(const mtiaTorchConv& p, const int64_t* s) {
    (void)p;
    return s[0] * s[1] * s[2];
}

void checkCommon(const at::Tensor& input, const at::Tensor& weight) {
    TORCH_CHECK(input.device() == weight.device(),
                "Expected all tensors to be on the same device, but found ", input.device(),
                " and ", weight.device());
    TORCH_CHECK(input.scalar_type() == weight.scalar_type(), "Input type (", input.scalar_type(),
                ") and weight type (", weight.scalar_type(), ") should be the same");
    TORCH_CHECK((at::isFloatingType(input.scalar_type()) || input.scalar_type() == at::kLong) &&
                    kernelSupports(input.scalar_type()),
                "torch_mtia: convolution has no device kernel for ", input.scalar_type());
}

// The four computations, on contiguous tensors of the compute type, in terms of a regular
// convolution of an input of sizes inSizes with weight (out channels, in channels / groups,
// kernel).
struct Geometry {
    at::IntArrayRef stride, padding, dilation;
    int64_t groups;
    at::ScalarType type;
    c10::Device device;
    at::ScalarType storedType;  // the tensors' own dtype (half, bfloat16: computed in float)
    bool roundBFloat16 = false;
};

// Whether an output padding reaches the stride in some dim.
bool outputPaddingReachesStride(at::IntArrayRef outputPadding, at::IntArrayRef stride) {
    for (size_t d = 0; d < outputPadding.size(); ++d)
        if (outputPadding[d] >= (stride.size() == 1 ? stride[0] : stride[d])) return true;
    return false;
}

std::vector<int64_t> sizesOf(const mtiaTorchConv& p, int64_t channels, const int64_t* spatial,
                             int64_t dims) {
    std::vector<int64_t> sizes{p.batch, channels};
    for (int64_t d = 0; d < dims; ++d) sizes.push_back(spatial[3 - dims + d]);
    return sizes;
}

// Sets the output positions to spatial's (a transposed convolution's input, which can be smaller
// than the regular convolution's own output when output_padding reaches past the stride).
void limitOutput(mtiaTorchConv& p, at::IntArrayRef spatial) {
    const auto dims = static_cast<int64_t>(spatial.size());
    for (int64_t d = 0; d < dims; ++d) {
        int64_t& out = p.outSize[3 - dims + d];
        TORCH_CHECK(spatial[d] > 0 && spatial[d] <= out, "torch_mtia: convolution of output size ",
                    spatial, " does not fit its input");
        out = spatial[d];
    }
}

// output = conv(input, weight) + bias, over outSpatial's positions when given.
at::Tensor forward(const Geometry& g, const at::Tensor& input, const at::Tensor& weight,
                   const at::Tensor& bias, at::IntArrayRef outSpatial = {}) {
    mtiaTorchConv p = convParams(mtiaTorchConvForward, input.sizes(), weight.sizes(), g.stride,
                                 g.padding, g.dilation, g.groups, g.type);
    if (!outSpatial.empty()) limitOutput(p, outSpatial);
    at::Tensor out =
        emptyDevice(sizesOf(p, p.outChannels, p.outSize, input.dim() - 2), g.type, g.device);
    if (out.numel() == 0) return out;
    if (input.numel() == 0) return out.zero_();
    // Output positions split into chunks so that a single image still spreads over the engines.
    const int64_t L = spatialVolume(p, p.outSize);
    const int64_t images = p.batch * p.groups;
    const auto blocks = static_cast<int64_t>(blocksFor(p, 16));
    p.chunks =
        std::clamp<int64_t>(blocks / std::max<int64_t>(images, 1), 1, std::max<int64_t>(L / 64, 1));
    launch(p, input, weight, bias, out, static_cast<uint64_t>(images * p.chunks));
    return out;
}

// The gradient w.r.t. a regular convolution's input of sizes inSizes, plus bias per channel.
at::Tensor gradInput(const Geometry& g, const at::Tensor& grad, const at::Tensor& weight,
                     const at::Tensor& bias, at::IntArrayRef inSizes) {
    at::Tensor out = emptyDevice(inSizes, g.type, g.device);
    if (out.numel() == 0) return out;
    if (grad.numel() == 0 || weight.numel() == 0) {
        out.zero_();
        if (bias.defined()) {
            // Only reachable with no output positions or no weights: bias alone, per channel.
            std::vector<int64_t> shape(inSizes.size(), 1);
            shape[1] = inSizes[1];
            out.add_(bias.view(shape));
        }
        return out;
    }
    mtiaTorchConv p = convParams(mtiaTorchConvGradInput, inSizes, weight.sizes(), g.stride,
                                 g.padding, g.dilation, g.groups, g.type);
    // The CPU's float16 transposed convolution and input gradient round the columns and each col2im
    // sum to float16 (its bfloat16 ones go through oneDNN, which accumulates in float).
    // bfloat16 also rounds so where the CPU cannot use oneDNN: a transposed convolution whose
    // output padding reaches its stride in some dim (then the CPU's own col2im runs in bfloat16).
    if (g.storedType == at::kHalf) p.roundTo = mtiaTorchFloat16;
    if (g.storedType == at::kBFloat16 && g.roundBFloat16) p.roundTo = mtiaTorchBFloat16;
    limitOutput(p, grad.sizes().slice(2));
    launch(p, out, weight, bias, grad, static_cast<uint64_t>(p.batch * p.groups));
    return out;
}

// The gradient w.r.t. the weight of a regular convolution of input whose output gradient is grad.
at::Tensor gradWeight(const Geometry& g, const at::Tensor& input, const at::Tensor& grad,
                      at::IntArrayRef weightSizes) {
    at::Tensor out = emptyDevice(weightSizes, g.type, g.device);
    if (out.numel() == 0) return out;
    if (input.numel() == 0 || grad.numel() == 0) return out.zero_();
    mtiaTorchConv p = convParams(mtiaTorchConvGradWeight, input.sizes(), weightSizes, g.stride,
                                 g.padding, g.dilation, g.groups, g.type);
    limitOutput(p, grad.sizes().slice(2));
    const int64_t K = (p.inChannels / p.groups) * spatialVolume(p, p.kernel);
    p.chunks = std::clamp<int64_t>(static_cast<int64_t>(blocksFor(p, 16)) / p.groups, 1,
                                   std::max<int64_t>(K / 16, 1));
    launch(p, input, out, at::Tensor(), grad, static_cast<uint64_t>(p.groups * p.chunks));
    return out;
}

// grad summed over the batch and the positions, per channel.
at::Tensor gradBias(const Geometry& g, const at::Tensor& grad) {
    const int64_t channels = grad.size(1);
    at::Tensor out = emptyDevice({channels}, g.type, g.device);
    if (channels == 0) return out;
    if (grad.numel() == 0) return out.zero_();
    // As a 1x1 convolution's bias gradient, whose positions are grad's own.
    std::vector<int64_t> unitKernel(grad.dim(), 1);
    unitKernel[0] = channels;
    mtiaTorchConv p =
        convParams(mtiaTorchConvGradBias, grad.sizes(), unitKernel, {1}, {0}, {1}, 1, g.type);
    launch(p, grad, at::Tensor(), out, grad, static_cast<uint64_t>(channels));
    return out;
}

at::Tensor narrowed(const at::Tensor& t, at::ScalarType type) {
    if (!t.defined() || t.scalar_type() == type) return t;
    at::Tensor r = emptyDevice(t.sizes(), type, t.device());
    copyOnDevice(r, t);
    return r;
}

// A transposed convolution's output sizes: the input sizes of the regular convolution it is the
// input gradient of.
std::vector<int64_t> transposedSizes(const at::Tensor& input, const at::Tensor& weight,
                                     const Geometry& g, at::IntArrayRef outputPadding) {
    std::vector<int64_t> sizes{input.size(0), weight.size(1) * g.groups};
    auto at = [](at::IntArrayRef v, int64_t d) { return v.size() == 1 ? v[0] : v[d]; };
    for (int64_t d = 0; d < input.dim() - 2; ++d) {
        const int64_t op = outputPadding.empty() ? 0 : at(outputPadding, d);
        sizes.push_back((input.size(2 + d) - 1) * at(g.stride, d) - 2 * at(g.padding, d) +
                        at(g.dilation, d) * (weight.size(2 + d) - 1) + op + 1);
        TORCH_CHECK(sizes.back() > 0,
                    "torch_mtia: transposed convolution output size is too small");
    }
    return sizes;
}

at::Tensor convolution(const at::Tensor& input, const at::Tensor& weight,
                       const c10::optional<at::Tensor>& biasOpt, c10::SymIntArrayRef stride,
                       c10::SymIntArrayRef padding, c10::SymIntArrayRef dilation, bool transposed,
                       c10::SymIntArrayRef outputPadding, c10::SymInt groups) {
    checkCommon(input, weight);
    const c10::DeviceGuard guard(input.device());
    const at::ScalarType type = input.scalar_type(), ct = computeType(type);
    Geometry g{C10_AS_INTARRAYREF_SLOW(stride),
               C10_AS_INTARRAYREF_SLOW(padding),
               C10_AS_INTARRAYREF_SLOW(dilation),
               groups.expect_int(),
               ct,
               input.device(),
               type};
    g.roundBFloat16 =
        transposed && outputPaddingReachesStride(C10_AS_INTARRAYREF_SLOW(outputPadding), g.stride);
    const at::Tensor x = contiguousOnDevice(input, ct), w = contiguousOnDevice(weight, ct);
    const at::Tensor bias =
        biasOpt && biasOpt->defined() ? contiguousOnDevice(*biasOpt, ct) : at::Tensor();
    at::Tensor out =
        transposed
            ? gradInput(g, x, w, bias,
                        transposedSizes(input, weight, g, C10_AS_INTARRAYREF_SLOW(outputPadding)))
            : forward(g, x, w, bias);
    return narrowed(out, type);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor>
convolutionBackward(const at::Tensor& gradOutput, const at::Tensor& input, const at::Tensor& weight,
                    c10::SymIntArrayRef stride, c10::SymIntArrayRef padding,
                    c10::SymIntArrayRef dilation, bool transposed,
                    c10::SymIntArrayRef /*outputPadding*/, c10::SymInt groups,
                    std::array<bool, 3> outputMask) {
    checkCommon(input, weight);
    TORCH_CHECK(gradOutput.device() == input.device() &&
                    gradOutput.scalar_type() == input.scalar_type(),
                "torch_mtia: convolution_backward expects grad_output of the input's device and "
                "dtype");
    const c10::DeviceGuard guard(input.device());
    const at::ScalarType type = input.scalar_type(), ct = computeType(type);
    const Geometry g{C10_AS_INTARRAYREF_SLOW(stride),
                     C10_AS_INTARRAYREF_SLOW(padding),
                     C10_AS_INTARRAYREF_SLOW(dilation),
                     groups.expect_int(),
                     ct,
                     input.device(),
                     type};
    const at::Tensor grad = contiguousOnDevice(gradOutput, ct);
    const at::Tensor w = contiguousOnDevice(weight, ct);
    at::Tensor gi, gw, gb;
    if (!transposed) {
        if (outputMask[0]) gi = gradInput(g, grad, w, at::Tensor(), input.sizes());
        if (outputMask[1]) gw = gradWeight(g, contiguousOnDevice(input, ct), grad, weight.sizes());
    } else {
        // y = conv_transpose(x, w) is the input gradient of a regular convolution of y's shape:
        // dx is that convolution of dy, dw its weight gradient with dy as the input and x as the
        // output gradient.
        if (outputMask[0]) gi = forward(g, grad, w, at::Tensor(), input.sizes().slice(2));
        if (outputMask[1]) gw = gradWeight(g, grad, contiguousOnDevice(input, ct), weight.sizes());
    }
    if (outputMask[2]) gb = gradBias(g, grad);
    return {narrowed(gi, type), narrowed(gw, type), narrowed(gb, type)};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, MTIA, m) {
    m.impl("convolution_overrideable", TORCH_FN(convolution));
    m.impl("convolution_backward_overrideable", TORCH_FN(convolutionBackward));
}

}  // namespace torch_mtia
