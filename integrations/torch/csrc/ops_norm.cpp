// Layer norm and batch norm on the device, forward and backward (kernels/norm_kernels.cpp): the
// CPU's argument checks and output dtypes here (statistics in float for a half or bfloat16 input
// with float parameters, else in the input's dtype). F.batch_norm reaches native_batch_norm and
// native_batch_norm_backward for MTIA (through _batch_norm_impl_index); the newer entry points
// (_native_batch_norm_legit, _batch_norm_with_update, batch_norm_backward) go to the same kernel.
#include "device_kernels.h"
#include "tensor_args.h"

#include "../kernels/norm_params.h"

#include <ATen/Functions.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <array>
#include <limits>
#include <tuple>

namespace torch_mtia::norm_ops {
namespace {

uint64_t addressOf(const at::Tensor& t) {
    return t.defined() ? reinterpret_cast<uint64_t>(t.data_ptr()) : 0;
}
int32_t dtypeOf(const at::Tensor& t) {
    return t.defined() ? kernelDtype(t.scalar_type()) : 0;
}
const at::Tensor& orUndefined(const std::optional<at::Tensor>& t) {
    static const at::Tensor undefined;
    return t && t->defined() ? *t : undefined;
}

// The statistics' dtype, after the CPU's mixed-dtype check: a half or bfloat16 input may take
// float parameters (statistics in float), otherwise all share the input's dtype.
at::ScalarType statType(const at::Tensor& input, std::initializer_list<const at::Tensor*> params) {
    const at::ScalarType in = input.scalar_type();
    bool mixed = false;
    for (const at::Tensor* t : params) {
        if (!t->defined() || t->scalar_type() == in) continue;
        TORCH_CHECK(at::isReducedFloatingType(in) && t->scalar_type() == at::kFloat,
                    "mixed dtype (CPU): all inputs must share same datatype.");
        mixed = true;
    }
    return mixed ? at::kFloat : in;
}

void checkFloating(const at::Tensor& input, const char* name) {
    TORCH_CHECK(at::isFloatingType(input.scalar_type()) && kernelSupports(input.scalar_type()),
                "\"", name, "\" not implemented for '", input.scalar_type(), "'");
}

// --- layer norm
// -----------------------------------------------------------------------------------

std::pair<int64_t, int64_t> layerNormRows(const at::Tensor& input, at::IntArrayRef shape,
                                          const at::Tensor& weight, const at::Tensor& bias) {
    const int64_t nd = static_cast<int64_t>(shape.size());
    TORCH_CHECK(nd >= 1, "Expected normalized_shape to be at least 1-dimensional, i.e., ",
                "containing at least one element, but got normalized_shape = ", shape);
    TORCH_CHECK(!weight.defined() || weight.sizes().equals(shape),
                "Expected weight to be of same shape as normalized_shape, but got ",
                "weight of shape ", weight.sizes(), " and normalized_shape = ", shape);
    TORCH_CHECK(!bias.defined() || bias.sizes().equals(shape),
                "Expected bias to be of same shape as normalized_shape, but got ", "bias of shape ",
                bias.sizes(), " and normalized_shape = ", shape);
    const int64_t axis = input.dim() - nd;
    bool ok = axis >= 0;
    for (int64_t i = 0; ok && i < nd; ++i) ok = input.size(axis + i) == shape[i];
    if (!ok) {
        std::ostringstream ss;
        ss << "Given normalized_shape=" << shape << ", expected input with shape [*";
        for (int64_t s : shape) ss << ", " << s;
        ss << "], but got input of size" << input.sizes();
        TORCH_CHECK(false, ss.str());
    }
    int64_t rows = 1, cols = 1;
    for (int64_t d = 0; d < input.dim(); ++d) (d < axis ? rows : cols) *= input.size(d);
    return {rows, cols};
}

std::vector<int64_t> statShape(const at::Tensor& input, size_t nd) {
    std::vector<int64_t> s(input.sizes().begin(), input.sizes().end());
    for (size_t i = s.size() - nd; i < s.size(); ++i) s[i] = 1;
    return s;
}

void launchLayerNorm(const mtiaTorchLayerNorm& p, uint64_t work) {
    static ModuleKernel kernel("mtia_torch_layer_norm");
    kernel.launch(p, gridFor(work));
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> layerNorm(const at::Tensor& input,
                                                         at::IntArrayRef shape,
                                                         const std::optional<at::Tensor>& weightOpt,
                                                         const std::optional<at::Tensor>& biasOpt,
                                                         double eps) {
    const c10::DeviceGuard guard(input.device());
    const at::Tensor& weight = orUndefined(weightOpt);
    const at::Tensor& bias = orUndefined(biasOpt);
    checkFloating(input, "layer_norm");
    const auto [rows, cols] = layerNormRows(input, shape, weight, bias);
    const at::ScalarType st = statType(input, {&weight, &bias});
    const at::Tensor x = contiguousOnDevice(input, input.scalar_type());
    const at::Tensor w =
        weight.defined() ? contiguousOnDevice(weight, weight.scalar_type()) : weight;
    const at::Tensor b =
        bias.defined()
            ? contiguousOnDevice(bias, weight.defined() ? weight.scalar_type() : bias.scalar_type())
            : bias;
    at::Tensor out = emptyDevice(input.sizes(), input.scalar_type(), input.device());
    at::Tensor mean = emptyDevice(statShape(input, shape.size()), st, input.device());
    at::Tensor rstd = emptyDevice(statShape(input, shape.size()), st, input.device());
    if (rows == 0) return {out, mean, rstd};
    if (cols == 0) {
        mean.fill_(std::numeric_limits<double>::quiet_NaN());
        rstd.fill_(std::numeric_limits<double>::quiet_NaN());
        return {out, mean, rstd};
    }
    mtiaTorchLayerNorm p{};
    p.op = mtiaTorchLayerNormForward;
    p.rows = rows;
    p.cols = cols;
    p.eps = eps;
    p.x = addressOf(x);
    p.xDtype = dtypeOf(x);
    p.weight = addressOf(w);
    p.bias = addressOf(b);
    p.wDtype = w.defined() ? dtypeOf(w) : dtypeOf(b);
    p.y = addressOf(out);
    p.yDtype = dtypeOf(out);
    p.mean = addressOf(mean);
    p.rstd = addressOf(rstd);
    p.statDtype = dtypeOf(mean);
    launchLayerNorm(p, static_cast<uint64_t>(rows * cols));
    return {out, mean, rstd};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor>
layerNormBackward(const at::Tensor& gradOut, const at::Tensor& input, at::IntArrayRef shape,
                  const at::Tensor& mean, const at::Tensor& rstd,
                  const std::optional<at::Tensor>& weightOpt,
                  const std::optional<at::Tensor>& biasOpt, std::array<bool, 3> mask) {
    const c10::DeviceGuard guard(input.device());
    const at::Tensor& weight = orUndefined(weightOpt);
    const at::Tensor& bias = orUndefined(biasOpt);
    checkFloating(input, "layer_norm_backward");
    const auto [rows, cols] = layerNormRows(input, shape, weight, bias);
    const at::Tensor x = contiguousOnDevice(input, input.scalar_type());
    const at::Tensor g = contiguousOnDevice(gradOut, gradOut.scalar_type());
    const at::Tensor m = contiguousOnDevice(mean, mean.scalar_type());
    const at::Tensor r = contiguousOnDevice(rstd, mean.scalar_type());
    const at::Tensor w =
        weight.defined() ? contiguousOnDevice(weight, weight.scalar_type()) : weight;
    at::Tensor gradInput, gradWeight, gradBias;
    if (mask[0]) gradInput = emptyDevice(input.sizes(), input.scalar_type(), input.device());
    const at::ScalarType pt = weight.defined() ? weight.scalar_type()
                              : bias.defined() ? bias.scalar_type()
                                               : input.scalar_type();
    if (mask[1] && weight.defined()) gradWeight = emptyDevice(shape, pt, input.device());
    if (mask[2] && bias.defined()) gradBias = emptyDevice(shape, pt, input.device());
    if (rows == 0 || cols == 0) {
        if (gradWeight.defined()) gradWeight.zero_();
        if (gradBias.defined()) gradBias.zero_();
        return {gradInput, gradWeight, gradBias};
    }
    mtiaTorchLayerNorm p{};
    p.rows = rows;
    p.cols = cols;
    p.x = addressOf(x);
    p.xDtype = dtypeOf(x);
    p.weight = addressOf(w);
    p.wDtype = kernelDtype(pt);
    p.mean = addressOf(m);
    p.rstd = addressOf(r);
    p.statDtype = dtypeOf(m);
    p.gradOut = addressOf(g);
    p.gDtype = dtypeOf(g);
    if (gradInput.defined()) {
        p.op = mtiaTorchLayerNormBackwardInput;
        p.y = addressOf(gradInput);
        p.yDtype = dtypeOf(gradInput);
        launchLayerNorm(p, static_cast<uint64_t>(rows * cols));
    }
    if (gradWeight.defined() || gradBias.defined()) {
        p.op = mtiaTorchLayerNormBackwardParams;
        p.y = 0;
        p.weight = 0;
        p.gradWeight = addressOf(gradWeight);
        p.gradBias = addressOf(gradBias);
        launchLayerNorm(p, static_cast<uint64_t>(rows * cols));
    }
    return {gradInput, gradWeight, gradBias};
}

// --- batch norm
// -----------------------------------------------------------------------------------

void setGeometry(mtiaTorchBatchNorm& p, const at::Tensor& input) {
    TORCH_CHECK(input.dim() >= 2, "batch_norm: expected an input of at least 2 dims, got ",
                input.dim());
    TORCH_CHECK(input.dim() <= MTIA_TORCH_MAX_DIMS, "torch_mtia: batch_norm of more than ",
                MTIA_TORCH_MAX_DIMS, " dims");
    p.ndim = static_cast<int32_t>(input.dim());
    for (int64_t d = 0; d < input.dim(); ++d) {
        p.sizes[d] = input.size(d);
        p.xStrides[d] = input.stride(d);
    }
}

void checkChannels(const at::Tensor& t, int64_t channels, const char* name) {
    TORCH_CHECK(!t.defined() || t.numel() == channels, name, " should contain ", channels,
                " elements not ", t.numel());
}

void launchBatchNorm(const mtiaTorchBatchNorm& p, const at::Tensor& input) {
    if (input.numel() == 0 && p.op != mtiaTorchBatchNormBackward) return;
    static ModuleKernel kernel("mtia_torch_batch_norm");
    kernel.launch(p, gridFor(static_cast<uint64_t>(std::max<int64_t>(input.numel(), 1))));
}

at::Tensor likeInput(const at::Tensor& input, at::ScalarType type) {
    return at::empty(input.sizes(),
                     input.options().dtype(type).memory_format(input.suggest_memory_format()));
}

std::tuple<at::Tensor, at::Tensor, at::Tensor>
batchNorm(const at::Tensor& input, const std::optional<at::Tensor>& weightOpt,
          const std::optional<at::Tensor>& biasOpt, const std::optional<at::Tensor>& runningMeanOpt,
          const std::optional<at::Tensor>& runningVarOpt, bool training, double momentum,
          double eps) {
    const c10::DeviceGuard guard(input.device());
    const at::Tensor& weight = orUndefined(weightOpt);
    const at::Tensor& bias = orUndefined(biasOpt);
    const at::Tensor& runningMean = orUndefined(runningMeanOpt);
    const at::Tensor& runningVar = orUndefined(runningVarOpt);
    checkFloating(input, "batch_norm");
    mtiaTorchBatchNorm p{};
    setGeometry(p, input);
    const int64_t channels = input.size(1);
    checkChannels(weight, channels, "weight");
    checkChannels(bias, channels, "bias");
    checkChannels(runningMean, channels, "running_mean");
    checkChannels(runningVar, channels, "running_var");
    if (!training) {
        TORCH_CHECK(runningMean.defined() && runningVar.defined(),
                    "running_mean and running_var must be defined in evaluation mode");
    }
    const at::ScalarType st = statType(input, {&weight, &bias, &runningMean, &runningVar});
    for (const at::Tensor* t : {&runningMean, &runningVar}) {
        TORCH_CHECK(!t->defined() || t->is_contiguous(),
                    "torch_mtia: batch_norm expects contiguous running statistics");
    }
    at::Tensor out = likeInput(input, input.scalar_type());
    at::Tensor saveMean = emptyDevice({training ? channels : 0}, st, input.device());
    at::Tensor saveInvstd = emptyDevice({training ? channels : 0}, st, input.device());
    const at::Tensor w =
        weight.defined() ? contiguousOnDevice(weight, weight.scalar_type()) : weight;
    const at::Tensor b = bias.defined() ? contiguousOnDevice(bias, w.defined() ? w.scalar_type()
                                                                               : bias.scalar_type())
                                        : bias;
    p.op = training ? mtiaTorchBatchNormTrain : mtiaTorchBatchNormEval;
    p.eps = eps;
    p.momentum = momentum;
    p.x = addressOf(input);
    p.xDtype = dtypeOf(input);
    p.y = addressOf(out);
    p.yDtype = dtypeOf(out);
    for (int64_t d = 0; d < input.dim(); ++d) p.yStrides[d] = out.stride(d);
    p.weight = addressOf(w);
    p.bias = addressOf(b);
    p.wDtype = w.defined() ? dtypeOf(w) : dtypeOf(b);
    p.runningMean = addressOf(runningMean);
    p.runningVar = addressOf(runningVar);
    p.runDtype = runningMean.defined() ? dtypeOf(runningMean) : dtypeOf(runningVar);
    TORCH_CHECK(!runningMean.defined() || !runningVar.defined() ||
                    runningMean.scalar_type() == runningVar.scalar_type(),
                "mixed dtype (CPU): all inputs must share same datatype.");
    if (training) {
        p.saveMean = addressOf(saveMean);
        p.saveInvstd = addressOf(saveInvstd);
        p.saveDtype = dtypeOf(saveMean);
    }
    if (input.numel() == 0) {
        // No elements: the CPU's statistics of nothing (mean NaN); nothing to normalise.
        if (training && channels > 0) {
            saveMean.fill_(std::numeric_limits<double>::quiet_NaN());
            saveInvstd.fill_(std::numeric_limits<double>::quiet_NaN());
        }
        return {out, saveMean, saveInvstd};
    }
    launchBatchNorm(p, input);
    return {out, saveMean, saveInvstd};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> batchNormBackward(
    const at::Tensor& gradOut, const at::Tensor& input, const std::optional<at::Tensor>& weightOpt,
    const std::optional<at::Tensor>& runningMeanOpt, const std::optional<at::Tensor>& runningVarOpt,
    const std::optional<at::Tensor>& saveMeanOpt, const std::optional<at::Tensor>& saveInvstdOpt,
    bool train, double eps, std::array<bool, 3> mask) {
    const c10::DeviceGuard guard(input.device());
    const at::Tensor& weight = orUndefined(weightOpt);
    const at::Tensor& runningMean = orUndefined(runningMeanOpt);
    const at::Tensor& runningVar = orUndefined(runningVarOpt);
    const at::Tensor& saveMean = orUndefined(saveMeanOpt);
    const at::Tensor& saveInvstd = orUndefined(saveInvstdOpt);
    checkFloating(input, "batch_norm_backward");
    TORCH_CHECK(gradOut.sizes() == input.sizes(), "batch_norm_backward: grad_out of sizes ",
                gradOut.sizes(), " for an input of sizes ", input.sizes());
    mtiaTorchBatchNorm p{};
    setGeometry(p, input);
    const int64_t channels = input.size(1);
    if (train) {
        TORCH_CHECK(saveMean.defined() && saveInvstd.defined(),
                    "batch_norm_backward: save_mean and save_invstd must be defined in training");
    } else {
        TORCH_CHECK(runningMean.defined() && runningVar.defined(),
                    "batch_norm_backward: running_mean and running_var must be defined in ",
                    "evaluation mode");
    }
    at::Tensor gradInput, gradWeight, gradBias;
    if (mask[0]) gradInput = likeInput(input, input.scalar_type());
    const at::ScalarType wt = weight.defined() ? weight.scalar_type() : input.scalar_type();
    if (mask[1]) gradWeight = emptyDevice({channels}, wt, input.device());
    if (mask[2]) gradBias = emptyDevice({channels}, wt, input.device());
    if (channels == 0) return {gradInput, gradWeight, gradBias};
    const at::Tensor w =
        weight.defined() ? contiguousOnDevice(weight, weight.scalar_type()) : weight;
    const at::Tensor sm = train ? contiguousOnDevice(saveMean, saveMean.scalar_type()) : saveMean;
    const at::Tensor si =
        train ? contiguousOnDevice(saveInvstd, saveMean.scalar_type()) : saveInvstd;
    const at::Tensor rm =
        !train ? contiguousOnDevice(runningMean, runningMean.scalar_type()) : runningMean;
    const at::Tensor rv =
        !train ? contiguousOnDevice(runningVar, runningMean.scalar_type()) : runningVar;
    p.op = mtiaTorchBatchNormBackward;
    p.train = train ? 1 : 0;
    p.eps = eps;
    p.x = addressOf(input);
    p.xDtype = dtypeOf(input);
    p.gradOut = addressOf(gradOut);
    p.gDtype = dtypeOf(gradOut);
    for (int64_t d = 0; d < input.dim(); ++d) p.gStrides[d] = gradOut.stride(d);
    if (gradInput.defined()) {
        p.gradInput = addressOf(gradInput);
        p.gxDtype = dtypeOf(gradInput);
        for (int64_t d = 0; d < input.dim(); ++d) p.gxStrides[d] = gradInput.stride(d);
    }
    p.weight = addressOf(w);
    p.wDtype = dtypeOf(w);
    if (train) {
        p.saveMean = addressOf(sm);
        p.saveInvstd = addressOf(si);
        p.saveDtype = dtypeOf(sm);
    } else {
        p.runningMean = addressOf(rm);
        p.runningVar = addressOf(rv);
        p.runDtype = dtypeOf(rm);
    }
    p.gradWeight = addressOf(gradWeight);
    p.gradBias = addressOf(gradBias);
    p.gwDtype = kernelDtype(wt);
    launchBatchNorm(p, input);
    return {gradInput, gradWeight, gradBias};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor>
batchNormLegit(const at::Tensor& input, const std::optional<at::Tensor>& weight,
               const std::optional<at::Tensor>& bias, at::Tensor& runningMean,
               at::Tensor& runningVar, bool training, double momentum, double eps) {
    return batchNorm(input, weight, bias, runningMean, runningVar, training, momentum, eps);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor>
batchNormLegitNoStats(const at::Tensor& input, const std::optional<at::Tensor>& weight,
                      const std::optional<at::Tensor>& bias, bool training, double momentum,
                      double eps) {
    return batchNorm(input, weight, bias, c10::nullopt, c10::nullopt, training, momentum, eps);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor>
batchNormWithUpdate(const at::Tensor& input, const std::optional<at::Tensor>& weight,
                    const std::optional<at::Tensor>& bias, at::Tensor& runningMean,
                    at::Tensor& runningVar, double momentum, double eps) {
    auto [out, mean, invstd] =
        batchNorm(input, weight, bias, runningMean, runningVar, true, momentum, eps);
    // The reserve of the CPU's path: an empty byte tensor.
    at::Tensor reserve = emptyDevice({0}, at::kByte, input.device());
    return {out, mean, invstd, reserve};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> batchNormBackwardUpdate(
    const at::Tensor& gradOut, const at::Tensor& input, const at::Tensor& weight,
    const std::optional<at::Tensor>& runningMean, const std::optional<at::Tensor>& runningVar,
    const std::optional<at::Tensor>& saveMean, const std::optional<at::Tensor>& saveVar,
    bool update, double eps, std::array<bool, 3> mask, const at::Tensor& /*reserve*/) {
    return batchNormBackward(gradOut, input, weight, runningMean, runningVar, saveMean, saveVar,
                             update, eps, mask);
}

}  // namespace
}  // namespace torch_mtia::norm_ops

namespace torch_mtia::norm_ops {
TORCH_LIBRARY_IMPL(aten, MTIA, m) {
    m.impl("native_layer_norm", TORCH_FN(layerNorm));
    m.impl("native_layer_norm_backward", TORCH_FN(layerNormBackward));
    m.impl("native_batch_norm", TORCH_FN(batchNorm));
    m.impl("native_batch_norm_backward", TORCH_FN(batchNormBackward));
    m.impl("_native_batch_norm_legit", TORCH_FN(batchNormLegit));
    m.impl("_native_batch_norm_legit.no_stats", TORCH_FN(batchNormLegitNoStats));
    m.impl("_batch_norm_with_update", TORCH_FN(batchNormWithUpdate));
    m.impl("batch_norm_backward", TORCH_FN(batchNormBackwardUpdate));
}
}  // namespace torch_mtia::norm_ops
