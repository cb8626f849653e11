// Random operators on the device: uniform_, normal_ (and normal's tensor forms), bernoulli_
// (float and tensor p) and bernoulli.out, random_ (three forms), exponential_, randperm, and
// dropout as native_dropout / native_dropout_backward. Argument checks are PyTorch's own
// (ATen/native/DistributionTemplates.h, the checks the CPU runs), the kernels our stubs launch
// are kernels/random_kernels.cpp; (seed, offset) come from generator.h's philoxFor, which makes
// captured launches draw fresh numbers on each replay (see the design comment in generator.h).
//
// torch.nn.functional.dropout reaches aten::dropout, a CompositeImplicitAutograd operator whose
// PyTorch 2.13 body uses native_dropout only for CUDA, XPU, lazy and privateuse1 tensors; for
// MTIA it would run bernoulli_, div_ and mul. The AutogradMTIA (and MTIA) kernels of dropout and
// dropout_ below take the fused path for MTIA too, so forward and backward run one kernel each.
#include "device_kernels.h"
#include "generator.h"
#include "tensor_args.h"

#include "../kernels/random_params.h"

#include <ATen/ExpandUtils.h>
#include <ATen/Functions.h>
#include <ATen/native/DistributionTemplates.h>
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <limits>

namespace torch_mtia {
namespace {

mtiaTorchRandom randomOver(int32_t kind, const at::Tensor& out) {
    TORCH_CHECK(out.dim() <= MTIA_TORCH_MAX_DIMS, "torch_mtia: tensors of more than ",
                MTIA_TORCH_MAX_DIMS, " dims are not supported");
    mtiaTorchRandom p{};
    p.kind = kind;
    p.ndim = static_cast<int32_t>(out.dim());
    for (int64_t d = 0; d < out.dim(); ++d) p.sizes[d] = out.size(d);
    p.numel = static_cast<uint64_t>(out.numel());
    p.out = tensorArg(out, out.sizes());
    return p;
}

void launchRandom(mtiaTorchRandom& p, const std::optional<at::Generator>& gen, c10::Device device) {
    if (p.numel == 0) return;
    if (p.kind != mtiaTorchRandDropoutBackward) {
        const uint64_t perCounter = p.wide ? 2 : 4;
        p.rng = philoxFor(gen, device, (p.numel + perCounter - 1) / perCounter * 4);
    }
    static ModuleKernel kernel("mtia_torch_random");
    kernel.launch(p, gridFor(p.numel));
}

// The CPU's refusal of a dtype its kernel does not handle (NotImplementedError in Python).
void checkDtype(bool supported, at::ScalarType type, const char* name) {
    TORCH_CHECK_NOT_IMPLEMENTED(supported, "\"", name, "\" not implemented for '",
                                c10::toString(type), "'");
}

void checkFloating(const at::Tensor& t, const char* name) {
    checkDtype(at::isFloatingType(t.scalar_type()) && kernelSupports(t.scalar_type()),
               t.scalar_type(), name);
}

void checkDevice(const at::Tensor& t, const at::Tensor& like) {
    TORCH_CHECK(t.device() == like.device(),
                "Expected all tensors to be on the same device, but found at least two devices, ",
                like.device(), " and ", t.device(), "!");
}

bool isDouble(const at::Tensor& t) {
    return t.scalar_type() == at::kDouble;
}

// The stubs PyTorch's checking templates call, after the CPU's checks.
template <typename RNG>
struct UniformStub {
    void operator()(at::TensorIteratorBase& iter, double from, double to,
                    std::optional<at::Generator> gen) {
        const at::Tensor& self = iter.tensor(0);
        mtiaTorchRandom p = randomOver(mtiaTorchRandUniform, self);
        p.wide = isDouble(self);
        p.a = from;
        p.b = to;
        launchRandom(p, gen, self.device());
    }
};

template <typename RNG>
struct NormalStub {
    void operator()(const at::Tensor& self, double mean, double std,
                    std::optional<at::Generator> gen) {
        checkFloating(self, "normal_kernel_mtia");
        mtiaTorchRandom p = randomOver(mtiaTorchRandNormal, self);
        p.wide = isDouble(self);
        p.a = mean;
        p.b = std;
        launchRandom(p, gen, self.device());
    }
};

template <typename RNG>
struct ExponentialStub {
    void operator()(at::TensorIteratorBase& iter, double lambda, std::optional<at::Generator> gen) {
        const at::Tensor& self = iter.tensor(0);
        TORCH_CHECK(at::isFloatingType(self.scalar_type()),
                    "Exponential distribution is a continuous probability distribution. dtype must "
                    "be a floating point but you specified ",
                    self.scalar_type());
        mtiaTorchRandom p = randomOver(mtiaTorchRandExponential, self);
        p.wide = isDouble(self);
        p.a = lambda;
        launchRandom(p, gen, self.device());
    }
};

void launchRange(const at::Tensor& self, uint64_t range, int64_t base,
                 const std::optional<at::Generator>& gen) {
    mtiaTorchRandom p = randomOver(mtiaTorchRandRange, self);
    p.wide = range == 0 || range > (uint64_t{1} << 32);
    p.range = range;
    p.base = base;
    launchRandom(p, gen, self.device());
}

// random_(): [0, 2^digits] for floating types, [0, max] for integers, {0, 1} for bool.
template <typename RNG>
struct RandomStub {
    void operator()(at::TensorIteratorBase& iter, std::optional<at::Generator> gen) {
        const at::Tensor& self = iter.tensor(0);
        uint64_t range = 0;
        switch (self.scalar_type()) {
        case at::kBool: range = 2; break;
        case at::kByte: range = 256; break;
        case at::kChar: range = 128; break;
        case at::kShort: range = 32768; break;
        case at::kInt: range = uint64_t{1} << 31; break;
        case at::kLong: range = uint64_t{1} << 63; break;
        case at::kHalf: range = (uint64_t{1} << 11) + 1; break;
        case at::kBFloat16: range = (uint64_t{1} << 8) + 1; break;
        case at::kFloat: range = (uint64_t{1} << 24) + 1; break;
        case at::kDouble: range = (uint64_t{1} << 53) + 1; break;
        default: checkDtype(false, self.scalar_type(), "random_kernel_mtia");
        }
        launchRange(self, range, 0, gen);
    }
};

template <typename RNG>
struct RandomFromToStub {
    void operator()(at::TensorIteratorBase& iter, uint64_t range, int64_t base,
                    std::optional<at::Generator> gen) {
        checkDtype(kernelSupports(iter.tensor(0).scalar_type()), iter.tensor(0).scalar_type(),
                   "random_from_to_kernel_mtia");
        launchRange(iter.tensor(0), range, base, gen);
    }
    // The whole int64 range.
    void operator()(at::TensorIteratorBase& iter, std::optional<at::Generator> gen) {
        launchRange(iter.tensor(0), 0, 0, gen);
    }
};

template <typename RNG>
struct BernoulliScalarStub {
    void operator()(const at::Tensor& self, double p, std::optional<at::Generator> gen) {
        checkDtype(kernelSupports(self.scalar_type()), self.scalar_type(), "bernoulli_scalar_mtia");
        mtiaTorchRandom params = randomOver(mtiaTorchRandBernoulli, self);
        params.a = p;
        launchRandom(params, gen, self.device());
    }
};

template <typename RNG>
struct BernoulliTensorStub {
    void operator()(const at::Tensor& self, const at::Tensor& p_,
                    std::optional<at::Generator> gen) {
        checkDtype(kernelSupports(self.scalar_type()), self.scalar_type(),
                   "bernoulli_tensor_mtia_self_");
        checkFloating(p_, "bernoulli_tensor_mtia_p_");
        checkDevice(p_, self);
        const at::Tensor p = p_.expand(self.sizes());
        mtiaTorchRandom params = randomOver(mtiaTorchRandBernoulliTensor, self);
        params.in = tensorArg(p, self.sizes());
        launchRandom(params, gen, self.device());
    }
};

using Gen = at::Generator;
namespace tpl = at::native::templates;

at::Tensor& uniform_(at::Tensor& self, double from, double to, std::optional<at::Generator> gen) {
    const c10::DeviceGuard guard(self.device());
    return tpl::uniform_impl_<UniformStub, Gen>(self, from, to, std::move(gen));
}

at::Tensor& normal_(at::Tensor& self, double mean, double std, std::optional<at::Generator> gen) {
    const c10::DeviceGuard guard(self.device());
    return tpl::normal_impl_<NormalStub, Gen>(self, mean, std, std::move(gen));
}

// normal's tensor forms draw N(0, std) or N(0, 1) and then scale and shift with the device's mul_
// and add_, as the CPU does. Unlike the CPU, a negative element of a std tensor is not refused:
// the check reads the tensor's minimum on the host, which a graph capture cannot do.
at::Tensor& normalTensorFloatOut(const at::Tensor& mean, double std,
                                 std::optional<at::Generator> gen, at::Tensor& out) {
    const c10::DeviceGuard guard(out.device());
    return tpl::normal_out_impl<NormalStub, Gen>(out, mean, std, std::move(gen));
}

at::Tensor normalTensorFloat(const at::Tensor& mean, double std, std::optional<at::Generator> gen) {
    const c10::DeviceGuard guard(mean.device());
    return tpl::normal_impl<NormalStub, Gen>(mean, std, std::move(gen));
}

at::Tensor& normalFloatTensorOut(double mean, const at::Tensor& std,
                                 std::optional<at::Generator> gen, at::Tensor& out) {
    const c10::DeviceGuard guard(out.device());
    TORCH_CHECK(!std.is_complex(), "normal expects standard deviation to be non-complex");
    at::native::resize_output(out, std.sizes());
    tpl::normal_impl_<NormalStub, Gen>(out, 0, 1, std::move(gen));
    out.mul_(std).add_(at::full({}, mean, out.options()));
    return out;
}

at::Tensor normalFloatTensor(double mean, const at::Tensor& std, std::optional<at::Generator> gen) {
    const c10::DeviceGuard guard(std.device());
    at::Tensor out = at::empty_like(std, at::MemoryFormat::Contiguous);
    return normalFloatTensorOut(mean, std, std::move(gen), out);
}

at::Tensor& normalTensorTensorOut(const at::Tensor& mean, const at::Tensor& std,
                                  std::optional<at::Generator> gen, at::Tensor& out) {
    const c10::DeviceGuard guard(out.device());
    TORCH_CHECK(!std.is_complex(), "normal expects standard deviation to be non-complex");
    at::native::resize_output(out, at::infer_size(mean.sizes(), std.sizes()));
    tpl::normal_impl_<NormalStub, Gen>(out, 0, 1, std::move(gen));
    out.mul_(std).add_(mean);
    return out;
}

at::Tensor normalTensorTensor(const at::Tensor& mean, const at::Tensor& std,
                              std::optional<at::Generator> gen) {
    const c10::DeviceGuard guard(mean.device());
    at::Tensor out = at::empty(at::infer_size(mean.sizes(), std.sizes()), mean.options(),
                               at::MemoryFormat::Contiguous);
    return normalTensorTensorOut(mean, std, std::move(gen), out);
}

at::Tensor& bernoulliFloat_(at::Tensor& self, double p, std::optional<at::Generator> gen) {
    const c10::DeviceGuard guard(self.device());
    return tpl::bernoulli_impl_<BernoulliScalarStub, Gen>(self, p, std::move(gen));
}

at::Tensor& bernoulliTensor_(at::Tensor& self, const at::Tensor& p,
                             std::optional<at::Generator> gen) {
    const c10::DeviceGuard guard(self.device());
    return tpl::bernoulli_impl_<BernoulliTensorStub, Gen>(self, p, std::move(gen));
}

at::Tensor& bernoulliOut(const at::Tensor& self, std::optional<at::Generator> gen,
                         at::Tensor& out) {
    const c10::DeviceGuard guard(out.device());
    return tpl::bernoulli_out_impl<BernoulliTensorStub, Gen>(out, self, std::move(gen));
}

at::Tensor& random_(at::Tensor& self, std::optional<at::Generator> gen) {
    const c10::DeviceGuard guard(self.device());
    return tpl::random_impl<RandomStub, Gen>(self, std::move(gen));
}

at::Tensor& randomFrom_(at::Tensor& self, int64_t from, std::optional<int64_t> to,
                        std::optional<at::Generator> gen) {
    const c10::DeviceGuard guard(self.device());
    return tpl::random_from_to_impl<RandomFromToStub, Gen>(self, from, to, std::move(gen));
}

at::Tensor& randomTo_(at::Tensor& self, int64_t to, std::optional<at::Generator> gen) {
    return randomFrom_(self, 0, to, std::move(gen));
}

at::Tensor& exponential_(at::Tensor& self, double lambda, std::optional<at::Generator> gen) {
    const c10::DeviceGuard guard(self.device());
    return tpl::exponential_impl_<ExponentialStub, Gen>(self, lambda, std::move(gen));
}

// The largest n whose permutation out's dtype holds exactly (as the CPU's checks).
void checkRandpermSize(int64_t n, const at::Tensor& out) {
    TORCH_CHECK(n >= 0, "n must be non-negative, got", n);
    const at::ScalarType type = out.scalar_type();
    switch (type) {
    case at::kHalf:
        TORCH_CHECK(n <= (int64_t{1} << 11) + 1, "n cannot be greater than 2049 for Half type.");
        return;
    case at::kBFloat16: return;  // unchecked on the CPU too
    case at::kFloat:
        TORCH_CHECK(n <= (int64_t{1} << 24) + 1, "n cannot be greater than 2^24+1 for Float type.");
        return;
    case at::kDouble:
        TORCH_CHECK(n <= (int64_t{1} << 53) + 1,
                    "n cannot be greater than 2^53+1 for Double type.");
        return;
    default: break;
    }
    // n - 1 must convert to the dtype, as the CPU's check converts it.
    int64_t max = 0;
    const char* name = "";
    switch (type) {
    case at::kByte: max = std::numeric_limits<uint8_t>::max(), name = "uint8_t"; break;
    case at::kChar: max = std::numeric_limits<int8_t>::max(), name = "int8_t"; break;
    case at::kShort: max = std::numeric_limits<int16_t>::max(), name = "int16_t"; break;
    case at::kInt: max = std::numeric_limits<int32_t>::max(), name = "int"; break;
    case at::kLong: return;
    default: checkDtype(false, type, "randperm");
    }
    TORCH_CHECK(n == 0 || n - 1 <= max, "value cannot be converted to type ", name,
                " without overflow");
}

at::Tensor& randpermOut(int64_t n, std::optional<at::Generator> gen, at::Tensor& out) {
    const c10::DeviceGuard guard(out.device());
    checkRandpermSize(n, out);
    out.resize_({n});
    if (n == 0) return out;
    mtiaTorchRandperm p{};
    p.rng = philoxFor(gen, out.device(), 4 * static_cast<uint64_t>(n));
    p.data = reinterpret_cast<uint64_t>(out.data_ptr());
    p.dtype = kernelDtype(out.scalar_type());
    p.stride = out.stride(0);
    p.n = n;
    static ModuleKernel kernel("mtia_torch_randperm");
    kernel.launch(p, mtiaDim3{1, 1, 1});
    return out;
}

std::tuple<at::Tensor, at::Tensor> nativeDropout(const at::Tensor& input, double p,
                                                 std::optional<bool> train) {
    const c10::DeviceGuard guard(input.device());
    if (input.numel() == 0)
        return {input.clone(), at::empty_like(input, input.options().dtype(at::kBool))};
    if (train.has_value() && !*train) {
        return {input.clone(), at::ones_like(input, input.options().dtype(at::kBool))};
    }
    TORCH_CHECK(at::isFloatingType(input.scalar_type()),
                "result type Float can't be cast to the desired output type ",
                c10::toString(input.scalar_type()));
    const double keep = 1.0 - p;
    at::Tensor output = at::empty_like(input);
    at::Tensor mask =
        at::empty_like(input, input.options().dtype(at::kBool), at::MemoryFormat::Contiguous);
    mtiaTorchRandom params = randomOver(mtiaTorchRandDropout, output);
    params.in = tensorArg(input, output.sizes());
    params.mask = tensorArg(mask, output.sizes());
    params.a = keep;
    params.b = keep == 0 ? 0.0 : 1.0 / keep;
    launchRandom(params, std::nullopt, input.device());
    return {output, mask};
}

// grad * mask * scale: integral and bool gradients give the default floating dtype, as the CPU's
// product with a double scale does.
at::Tensor nativeDropoutBackward(const at::Tensor& grad, const at::Tensor& mask, double scale) {
    const c10::DeviceGuard guard(grad.device());
    TORCH_CHECK(mask.scalar_type() == at::kBool, "Mask should be Bool Scalar Type",
                mask.scalar_type());
    checkDevice(mask, grad);
    checkDtype(kernelSupports(grad.scalar_type()), grad.scalar_type(),
               "native_dropout_backward_mtia");
    const at::ScalarType type = at::isFloatingType(grad.scalar_type())
                                    ? grad.scalar_type()
                                    : c10::typeMetaToScalarType(c10::get_default_dtype());
    const auto sizes = at::infer_size(grad.sizes(), mask.sizes());
    at::Tensor out = grad.sizes() == at::IntArrayRef(sizes)
                         ? at::empty_like(grad, grad.options().dtype(type))
                         : at::empty(sizes, grad.options().dtype(type));
    mtiaTorchRandom params = randomOver(mtiaTorchRandDropoutBackward, out);
    params.in = tensorArg(grad, out.sizes());
    params.mask = tensorArg(mask, out.sizes());
    params.b = scale;
    launchRandom(params, std::nullopt, grad.device());
    return out;
}

bool fusedDropout(const at::Tensor& input, double p, bool train) {
    return train && p > 0 && p < 1 && input.numel() > 0;
}

at::Tensor dropout(const at::Tensor& input, double p, bool train) {
    if (fusedDropout(input, p, train)) return std::get<0>(at::native_dropout(input, p, train));
    TORCH_CHECK(p >= 0 && p <= 1, "dropout probability has to be between 0 and 1, but got ", p);
    if (p == 0 || !train || input.numel() == 0) return input;
    return input.mul(at::zeros({}, input.options()));
}

at::Tensor& dropout_(at::Tensor& input, double p, bool train) {
    if (fusedDropout(input, p, train))
        return input.copy_(std::get<0>(at::native_dropout(input, p, train)));
    TORCH_CHECK(p >= 0 && p <= 1, "dropout probability has to be between 0 and 1, but got ", p);
    if (p == 0 || !train || input.numel() == 0) return input;
    return input.mul_(at::zeros({}, input.options()));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, MTIA, m) {
    m.impl("uniform_", uniform_);
    m.impl("normal_", normal_);
    m.impl("normal.Tensor_float", normalTensorFloat);
    m.impl("normal.Tensor_float_out", normalTensorFloatOut);
    m.impl("normal.float_Tensor", normalFloatTensor);
    m.impl("normal.float_Tensor_out", normalFloatTensorOut);
    m.impl("normal.Tensor_Tensor", normalTensorTensor);
    m.impl("normal.Tensor_Tensor_out", normalTensorTensorOut);
    m.impl("bernoulli_.float", bernoulliFloat_);
    m.impl("bernoulli_.Tensor", bernoulliTensor_);
    m.impl("bernoulli.out", bernoulliOut);
    m.impl("random_", random_);
    m.impl("random_.from", randomFrom_);
    m.impl("random_.to", randomTo_);
    m.impl("exponential_", exponential_);
    m.impl("randperm.generator_out", randpermOut);
    m.impl("native_dropout", nativeDropout);
    m.impl("native_dropout_backward", nativeDropoutBackward);
    m.impl("dropout", dropout);
    m.impl("dropout_", dropout_);
}

// dropout is CompositeImplicitAutograd: a kernel of its own for AutogradMTIA replaces the composite
// for MTIA tensors; native_dropout, which it calls, records its backward.
TORCH_LIBRARY_IMPL(aten, AutogradMTIA, m) {
    m.impl("dropout", dropout);
    m.impl("dropout_", dropout_);
}

}  // namespace torch_mtia
