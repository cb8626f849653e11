// MTIA arithmetic kernels: add/sub/mul (Tensor and Scalar forms, out of place and in place),
// relu, threshold_backward, mm, addmm and sum. Float32 contiguous operands of one shape use the
// runtime's built-in kernels (add_f32, mul_f32, relu_f32, matmul_f32, reduce_sum_f32); everything
// else runs the strided elementwise kernel of the integration's module, with broadcasting, type
// promotion and the CPU's argument and overlap checks done here.
#include "device_kernels.h"
#include "mtia_check.h"
#include "streams.h"
#include "tensor_args.h"

#include <ATen/ExpandUtils.h>
#include <ATen/Functions.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/OpMathType.h>
#include <ATen/WrapDimUtilsMulti.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

namespace torch_mtia {
namespace {

// A CPU scalar tensor next to a device tensor acts as a number, as PyTorch allows.
bool isCpuScalar(const at::Tensor& t) {
    return t.device().is_cpu() && t.dim() == 0;
}

void checkOperands(const at::Tensor& self, const at::Tensor& other) {
    TORCH_CHECK(isCpuScalar(other) || other.device() == self.device(),
                "torch_mtia: expected all tensors on ", self.device(), ", got one on ",
                other.device());
}

// The device of a binary op's operands: either may be a CPU scalar (torch.tensor(2.) * x), not
// both.
const at::Tensor& deviceOperand(const at::Tensor& self, const at::Tensor& other) {
    const at::Tensor& d = isCpuScalar(self) && !isCpuScalar(other) ? other : self;
    checkOperands(d, &d == &self ? other : self);
    return d;
}

bool builtinEligible(const at::Tensor& out, const at::Tensor& a, const at::Tensor& b) {
    return out.scalar_type() == at::kFloat && a.scalar_type() == at::kFloat &&
           b.scalar_type() == at::kFloat && out.is_contiguous() && a.is_contiguous() &&
           b.is_contiguous() && a.sizes() == out.sizes() && b.sizes() == out.sizes() && isDevice(b);
}

// out = sa * a + sb * b over out's shape (a and b broadcast), or a * b when multiply.
void binaryInto(const at::Tensor& out, const at::Tensor& a, const at::Tensor& b, bool multiply,
                const c10::Scalar& sa, const c10::Scalar& sb) {
    if (out.numel() == 0) return;
    const bool unitScales = sa.equal(1) && sb.equal(1);
    if (unitScales && builtinEligible(out, a, b)) {
        void* o = out.data_ptr();
        const void* x = a.data_ptr();
        const void* y = b.data_ptr();
        const uint64_t n = static_cast<uint64_t>(out.numel());
        launchBuiltin(multiply ? "mul_f32" : "add_f32", {&o, &x, &y, &n}, n);
        return;
    }
    mtiaTorchElementwise p =
        elementwiseOver(multiply ? mtiaTorchOpMul : mtiaTorchOpLinComb, out, out.sizes());
    p.a = tensorArg(a, out.sizes());
    p.b = tensorArg(b, out.sizes());
    setScalar(p.alpha, p.ialpha, sa);
    setScalar(p.beta, p.ibeta, sb);
    launchElementwise(p);
}

// Scalar operands become 0-dim device tensors written by a fill kernel (not a host copy, which a
// graph capture would refuse), so every form runs through binaryInto.
at::Tensor scalarTensor(const c10::Scalar& s, at::ScalarType type, const at::Tensor& like) {
    at::Tensor d = emptyDevice({}, type, like.device());
    d.fill_(s);
    return d;
}

// A CPU scalar operand becomes a 0-dim device tensor of the op's computation type: converted first,
// as the CPU converts a wrapped scalar to the common dtype before the arithmetic, so float32 and
// float16 results round as the CPU's do.
at::Tensor onDevice(const at::Tensor& t, const at::Tensor& like, at::ScalarType type) {
    if (!isCpuScalar(t)) return t;
    return scalarTensor(t.to(type).item(), type, like);
}

// The CPU's checks of add/sub's alpha for the result type (integral results take no floating alpha,
// only bool results take a bool one) and of sub's bool operands.
void checkAlpha(at::ScalarType type, const c10::Scalar& alpha) {
    TORCH_CHECK(!alpha.isBoolean() || type == at::kBool,
                "Boolean alpha only supported for Boolean results.");
    TORCH_CHECK(at::isFloatingType(type) || at::isComplexType(type) ||
                    alpha.isIntegral(/*includeBool=*/true),
                "For integral input tensors, argument alpha must not be a floating point number.");
}

void checkSub(at::ScalarType a, at::ScalarType b) {
    TORCH_CHECK(
        a != at::kBool || b != at::kBool,
        "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
        "`logical_xor()` operator instead.");
    TORCH_CHECK(
        a != at::kBool && b != at::kBool,
        "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to "
        "invert a mask, use the `~` or `logical_not()` operator instead.");
}

at::Tensor binary(const at::Tensor& self, const at::Tensor& other, bool multiply,
                  const c10::Scalar& sb) {
    const at::Tensor& dev = deviceOperand(self, other);
    const c10::DeviceGuard guard(dev.device());
    const at::ScalarType type = at::result_type(self, other);
    if (!multiply) checkAlpha(type, sb);
    at::Tensor out = emptyDevice(at::infer_size(self.sizes(), other.sizes()), type, dev.device());
    binaryInto(out, onDevice(self, dev, type), onDevice(other, dev, type), multiply, 1, sb);
    return out;
}

at::Tensor& binaryInPlace(at::Tensor& self, const at::Tensor& other, bool multiply,
                          const c10::Scalar& sb) {
    checkOperands(self, other);
    const c10::DeviceGuard guard(self.device());
    TORCH_CHECK(at::infer_size(self.sizes(), other.sizes()) == self.sizes(),
                "torch_mtia: output with shape ", self.sizes(),
                " doesn't match the broadcast shape of ", other.sizes());
    TORCH_CHECK(at::canCast(at::result_type(self, other), self.scalar_type()),
                "torch_mtia: result type ", at::result_type(self, other),
                " can't be cast to the desired output type ", self.scalar_type());
    if (!multiply) checkAlpha(at::result_type(self, other), sb);
    // The kernels read and write element by element: the CPU's overlap rules keep that well
    // defined.
    at::assert_no_internal_overlap(self);
    if (!isCpuScalar(other)) at::assert_no_partial_overlap(self, other);
    binaryInto(self, self, onDevice(other, self, at::result_type(self, other)), multiply, 1, sb);
    return self;
}

c10::Scalar negate(const c10::Scalar& s) {
    return s.isIntegral(true) ? c10::Scalar(-s.toLong()) : c10::Scalar(-s.toDouble());
}

at::Tensor addTensor(const at::Tensor& self, const at::Tensor& other, const c10::Scalar& alpha) {
    return binary(self, other, false, alpha);
}
at::Tensor subTensor(const at::Tensor& self, const at::Tensor& other, const c10::Scalar& alpha) {
    checkSub(self.scalar_type(), other.scalar_type());
    return binary(self, other, false, negate(alpha));
}
// PyTorch 2.13's CPU multiplies a half or bfloat16 tensor by a CPU scalar on the right (x * s, not
// s * x) with the scalar in float32, not first rounded to the tensor's dtype.
bool rightScalarInOpMath(const at::Tensor& other, at::ScalarType type) {
    return isCpuScalar(other) && at::isReducedFloatingType(type);
}

at::Tensor mulTensor(const at::Tensor& self, const at::Tensor& other) {
    const at::ScalarType type = at::result_type(self, other);
    if (!isCpuScalar(self) && rightScalarInOpMath(other, type)) {
        const c10::DeviceGuard guard(self.device());
        at::Tensor out = emptyDevice(self.sizes(), type, self.device());
        binaryInto(out, self, onDevice(other, self, at::kFloat), true, 1, 1);
        return out;
    }
    return binary(self, other, true, 1);
}

at::Tensor& addInPlace(at::Tensor& self, const at::Tensor& other, const c10::Scalar& alpha) {
    return binaryInPlace(self, other, false, alpha);
}
at::Tensor& subInPlace(at::Tensor& self, const at::Tensor& other, const c10::Scalar& alpha) {
    checkSub(self.scalar_type(), other.scalar_type());
    return binaryInPlace(self, other, false, negate(alpha));
}
at::Tensor& mulInPlace(at::Tensor& self, const at::Tensor& other) {
    if (rightScalarInOpMath(other, at::result_type(self, other)) &&
        at::isReducedFloatingType(self.scalar_type())) {
        checkOperands(self, other);
        const c10::DeviceGuard guard(self.device());
        at::assert_no_internal_overlap(self);
        binaryInto(self, self, onDevice(other, self, at::kFloat), true, 1, 1);
        return self;
    }
    return binaryInPlace(self, other, true, 1);
}

at::Tensor binaryScalar(const at::Tensor& self, const c10::Scalar& other, bool multiply,
                        const c10::Scalar& sb) {
    const c10::DeviceGuard guard(self.device());
    if (!multiply) checkAlpha(at::result_type(self, other), sb);
    at::Tensor out = emptyDevice(self.sizes(), at::result_type(self, other), self.device());
    binaryInto(out, self, scalarTensor(other, other.type(), self), multiply, 1, sb);
    return out;
}

at::Tensor addScalar(const at::Tensor& self, const c10::Scalar& other, const c10::Scalar& alpha) {
    return binaryScalar(self, other, false, alpha);
}
at::Tensor subScalar(const at::Tensor& self, const c10::Scalar& other, const c10::Scalar& alpha) {
    checkSub(self.scalar_type(), other.isBoolean() ? at::kBool : other.type());
    return addScalar(self, other, negate(alpha));
}
at::Tensor mulScalar(const at::Tensor& self, const c10::Scalar& other) {
    return binaryScalar(self, other, true, 1);
}

at::Tensor relu(const at::Tensor& self) {
    const c10::DeviceGuard guard(self.device());
    at::Tensor out = emptyDevice(self.sizes(), self.scalar_type(), self.device());
    if (out.numel() == 0) return out;
    if (self.scalar_type() == at::kFloat && self.is_contiguous()) {
        void* o = out.data_ptr();
        const void* a = self.data_ptr();
        const uint64_t n = static_cast<uint64_t>(out.numel());
        launchBuiltin("relu_f32", {&o, &a, &n}, n);
        return out;
    }
    mtiaTorchElementwise p = elementwiseOver(mtiaTorchOpRelu, out, out.sizes());
    p.a = tensorArg(self, out.sizes());
    launchElementwise(p);
    return out;
}

// relu's backward: the gradient where the forward input was above threshold, else 0 (NaN inputs
// pass the gradient, as on the CPU). On the device so that a backward through relu needs no host
// copies.
at::Tensor thresholdBackward(const at::Tensor& gradOutput, const at::Tensor& self,
                             const c10::Scalar& threshold) {
    checkOperands(self, gradOutput);
    TORCH_CHECK(!isCpuScalar(gradOutput), "torch_mtia: threshold_backward expects the gradient on ",
                self.device());
    const c10::DeviceGuard guard(self.device());
    at::Tensor out = emptyDevice(at::infer_size(gradOutput.sizes(), self.sizes()),
                                 at::result_type(gradOutput, self), self.device());
    if (out.numel() == 0) return out;
    mtiaTorchElementwise p = elementwiseOver(mtiaTorchOpThresholdBackward, out, out.sizes());
    p.a = tensorArg(gradOutput, out.sizes());
    p.b = tensorArg(self, out.sizes());
    // The CPU compares with the threshold converted to the computation's opmath type (0.1 as a
    // float32 is 0.100000001...; half and bfloat16 compare in float32, PyTorch 2.13): a 0-dim host
    // tensor of that type does the same rounding.
    setScalar(
        p.alpha, p.ialpha,
        at::scalar_tensor(threshold, at::TensorOptions().dtype(at::toOpMathType(out.scalar_type())))
            .item());
    launchElementwise(p);
    return out;
}

at::ScalarType sumType(const at::Tensor& self, c10::optional<at::ScalarType> dtype) {
    if (dtype) return *dtype;
    return at::isIntegralType(self.scalar_type(), /*includeBool=*/true) ? at::kLong
                                                                        : self.scalar_type();
}

at::Tensor sumDims(const at::Tensor& self, at::OptionalIntArrayRef dims, bool keepdim,
                   c10::optional<at::ScalarType> dtype) {
    const c10::DeviceGuard guard(self.device());
    const at::ScalarType type = sumType(self, dtype);
    const int64_t ndim = self.dim();
    std::bitset<64> reduce;
    if (!dims || dims->empty()) {
        reduce.set();
    } else {
        reduce = at::dim_list_to_bitset(*dims, ndim);
    }
    std::vector<int64_t> outSizes;
    for (int64_t d = 0; d < ndim; ++d) {
        if (!reduce[d]) {
            outSizes.push_back(self.size(d));
        } else if (keepdim) {
            outSizes.push_back(1);
        }
    }
    at::Tensor out = emptyDevice(outSizes, type, self.device());
    if (type == at::kFloat && self.scalar_type() == at::kFloat && self.is_contiguous() &&
        out.numel() == 1 && self.numel() > 0) {
        void* o = out.data_ptr();
        const void* a = self.data_ptr();
        const uint64_t n = static_cast<uint64_t>(self.numel());
        launchBuiltin("reduce_sum_f32", {&o, &a, &n}, 1);
        return out;
    }
    // The kernel adds each element into out in out's dtype: reduced-precision floats (half,
    // bfloat16) and float32 accumulate in a float64 tensor instead, converted to the output dtype
    // at the end (as PyTorch accumulates in a wider type; a half running total stops growing at
    // 2048).
    const bool widen = type == at::kHalf || type == at::kBFloat16 || type == at::kFloat;
    at::Tensor acc = widen ? emptyDevice(outSizes, at::kDouble, self.device()) : out;
    acc.zero_();
    if (self.numel() == 0) {
        if (widen) out.zero_();
        return out;
    }
    // Iterate over self's index space; acc's strides are 0 along the summed dims.
    mtiaTorchElementwise p{};
    p.op = mtiaTorchOpSumInto;
    TORCH_CHECK(ndim <= MTIA_TORCH_MAX_DIMS, "torch_mtia: sum of more than ", MTIA_TORCH_MAX_DIMS,
                " dims");
    p.ndim = static_cast<int32_t>(ndim);
    p.numel = static_cast<uint64_t>(self.numel());
    p.a = tensorArg(self, self.sizes());
    p.out.data = reinterpret_cast<uint64_t>(acc.data_ptr());
    p.out.dtype = kernelDtype(acc.scalar_type());
    int64_t outDim = 0;
    for (int64_t d = 0; d < ndim; ++d) {
        p.sizes[d] = self.size(d);
        if (reduce[d]) {
            p.out.strides[d] = 0;
            if (keepdim) ++outDim;
        } else {
            p.out.strides[d] = acc.stride(outDim++);
        }
    }
    launchElementwise(p);
    if (widen) copyOnDevice(out, acc);
    return out;
}

at::Tensor sum(const at::Tensor& self, c10::optional<at::ScalarType> dtype) {
    return sumDims(self, c10::nullopt, false, dtype);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, MTIA, m) {
    m.impl("add.Tensor", TORCH_FN(addTensor));
    m.impl("add_.Tensor", TORCH_FN(addInPlace));
    m.impl("add.Scalar", TORCH_FN(addScalar));
    m.impl("sub.Tensor", TORCH_FN(subTensor));
    m.impl("sub_.Tensor", TORCH_FN(subInPlace));
    m.impl("sub.Scalar", TORCH_FN(subScalar));
    m.impl("mul.Tensor", TORCH_FN(mulTensor));
    m.impl("mul_.Tensor", TORCH_FN(mulInPlace));
    m.impl("mul.Scalar", TORCH_FN(mulScalar));
    m.impl("relu", TORCH_FN(relu));
    m.impl("threshold_backward", TORCH_FN(thresholdBackward));
    m.impl("sum", TORCH_FN(sum));
    m.impl("sum.dim_IntList", TORCH_FN(sumDims));
}

}  // namespace torch_mtia
