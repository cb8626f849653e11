// Every elementwise operator on the device, through runPointwise (pointwise.h) and the pointwise
// kernel: unary math, binary arithmetic and comparisons, ternary ops, activations and their
// backwards, where, masked_fill, fill_.
//
// PyTorch's structured operators (sin, add, eq, ...) get only their out= overload here: PyTorch's
// CompositeExplicitAutogradNonFunctional kernels make the functional and in-place forms of a
// structured operator for any backend by running the operator's meta function (shape, type
// promotion, the output's layout, the in-place checks) and then calling the out= overload, which is
// ours. The most frequent ones (add, sub, mul, div) also get their functional and in-place forms
// here, which skips that meta pass. The unstructured ones (relu, hardtanh, where, masked_fill_,
// floor_divide, ...) are registered in every form they have.
#include "pointwise.h"
#include "pointwise_ops.h"
#include "tensor_args.h"

#include <ATen/ExpandUtils.h>
#include <ATen/Functions.h>
#include <ATen/OpMathType.h>
#include <ATen/Version.h>
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <cmath>
#include <limits>

namespace torch_mtia {
namespace {

using K = OutputKind;

PointwiseSpec spec(int32_t op, bool integerToFloat = false) {
    PointwiseSpec s;
    s.op = op;
    s.integerToFloat = integerToFloat;
    return s;
}

PointwiseSpec boolResult(int32_t op) {
    PointwiseSpec s = spec(op);
    s.resultType = at::kBool;
    return s;
}

// A scalar argument in the float and integer slots k of s.
void setScalarArg(PointwiseSpec& s, int k, const c10::Scalar& v) {
    if (v.isIntegral(/*includeBool=*/true)) {
        s.i[k] = v.toLong();
        s.f[k] = static_cast<double>(s.i[k]);
    } else {
        s.f[k] = v.toDouble();
        s.i[k] = static_cast<int64_t>(s.f[k]);
    }
}

// ---- unary ----

}  // namespace

at::Tensor unary(K kind, const at::Tensor& out, const at::Tensor& self, int32_t op, bool toFloat) {
    if (op == mtiaTorchPwNeg) {
        TORCH_CHECK(self.scalar_type() != at::kBool,
                    "Negation, the `-` operator, on a bool tensor is not supported. If you are "
                    "trying to invert a mask, use the `~` or `logical_not()` operator instead.");
    }
    return runPointwise(spec(op, toFloat), kind, out, {self});
}

namespace {

template <int32_t Op, bool ToFloat>
at::Tensor& unaryOut(const at::Tensor& self, at::Tensor& out) {
    runPointwise(spec(Op, ToFloat), K::Given, out, {self});
    return out;
}

// The CPU's name for a rounding kernel in its refusal of bool ("floor_vml_cpu").
constexpr const char* roundingName(int32_t op) {
    switch (op) {
    case mtiaTorchPwFloor: return "floor";
    case mtiaTorchPwCeil: return "ceil";
    case mtiaTorchPwTrunc: return "trunc";
    default: return "round";
    }
}

// floor, ceil, round, trunc of integers are the integers themselves; bool is refused, as the CPU
// refuses it.
template <int32_t Op>
at::Tensor& roundingOut(const at::Tensor& self, at::Tensor& out) {
    TORCH_CHECK(self.scalar_type() != at::kBool, "\"", roundingName(Op),
                "_vml_cpu\" not implemented for 'Bool'");
    const int32_t op = at::isIntegralType(self.scalar_type(), false) ? mtiaTorchPwCopy : Op;
    runPointwise(spec(op), K::Given, out, {self});
    return out;
}

at::Tensor& roundDecimalsOut(const at::Tensor& self, int64_t decimals, at::Tensor& out) {
    if (decimals == 0 || at::isIntegralType(self.scalar_type(), true)) {
        return roundingOut<mtiaTorchPwRound>(self, out);
    }
    PointwiseSpec s = spec(mtiaTorchPwRoundDecimals);
    s.f[0] = std::pow(10.0, static_cast<double>(std::abs(decimals)));
    s.i[0] = decimals > 0 ? 1 : 0;
    runPointwise(s, K::Given, out, {self});
    return out;
}

at::Tensor& negOut(const at::Tensor& self, at::Tensor& out) {
    unary(K::Given, out, self, mtiaTorchPwNeg, false);
    return out;
}

at::Tensor& absOut(const at::Tensor& self, at::Tensor& out) {
    TORCH_CHECK(self.scalar_type() != at::kBool, "\"abs_cpu\" not implemented for 'Bool'");
    runPointwise(spec(mtiaTorchPwAbs), K::Given, out, {self});
    return out;
}

at::Tensor& bitwiseNotOut(const at::Tensor& self, at::Tensor& out) {
    TORCH_CHECK(at::isIntegralType(self.scalar_type(), true),
                "\"bitwise_not_cpu\" not implemented for '", c10::toString(self.scalar_type()),
                "'");
    const int32_t op =
        self.scalar_type() == at::kBool ? mtiaTorchPwLogicalNot : mtiaTorchPwBitwiseNot;
    runPointwise(spec(op), K::Given, out, {self});
    return out;
}

at::Tensor& fracOut(const at::Tensor& self, at::Tensor& out) {
    TORCH_CHECK(at::isFloatingType(self.scalar_type()), "\"frac_cpu\" not implemented for '",
                c10::toString(self.scalar_type()), "'");
    return unaryOut<mtiaTorchPwFrac, false>(self, out);
}

template <int32_t Op>
at::Tensor& boolUnaryOut(const at::Tensor& self, at::Tensor& out) {
    runPointwise(boolResult(Op), K::Given, out, {self});
    return out;
}

at::Tensor isnan(const at::Tensor& self) {
    return runPointwise(boolResult(mtiaTorchPwIsNan), K::Allocate, {}, {self});
}

at::Tensor& nanToNumOut(const at::Tensor& self, std::optional<double> nan,
                        std::optional<double> posinf, std::optional<double> neginf,
                        at::Tensor& out) {
    if (at::isIntegralType(self.scalar_type(), true))
        return unaryOut<mtiaTorchPwCopy, false>(self, out);
    PointwiseSpec s = spec(mtiaTorchPwNanToNum);
    double hi = 0, lo = 0;
    switch (self.scalar_type()) {
    case at::kHalf: hi = 65504.0; break;
    case at::kBFloat16: hi = 3.38953138925153547590470800371487866880e+38; break;
    case at::kFloat: hi = std::numeric_limits<float>::max(); break;
    default: hi = std::numeric_limits<double>::max(); break;
    }
    lo = -hi;
    s.f[0] = nan.value_or(0.0);
    s.f[1] = posinf.value_or(hi);
    s.f[2] = neginf.value_or(lo);
    runPointwise(s, K::Given, out, {self});
    return out;
}

// ---- binary ----

void checkAlpha(at::ScalarType type, const c10::Scalar& alpha) {
    TORCH_CHECK(!alpha.isBoolean() || type == at::kBool,
                "Boolean alpha only supported for Boolean results.");
    TORCH_CHECK(at::isFloatingType(type) || at::isComplexType(type) ||
                    alpha.isIntegral(/*includeBool=*/true),
                "For integral input tensors, argument alpha must not be a floating point number.");
}

// A scalar argument converted to type as the CPU converts it before computing (float32: rounded to
// float; half and bfloat16: to the dtype).
double alphaIn(at::ScalarType type, const c10::Scalar& alpha) {
    if (type == at::kHalf) return static_cast<float>(static_cast<c10::Half>(alpha.toFloat()));
    if (type == at::kBFloat16)
        return static_cast<float>(static_cast<c10::BFloat16>(alpha.toFloat()));
    if (type == at::kFloat) return static_cast<double>(alpha.toFloat());
    return alpha.toDouble();
}

// How many 16-bit elements one of the CPU's vectors holds: its half and bfloat16 add rounds
// differently inside its vectorised loop and in the scalar tail after it, and that loop takes a
// row in steps of two vectors and then one more vector where one fits (measured: a row of 49
// bfloat16 elements on AVX512 is vectorised up to element 32, one of 121 up to 96).
int64_t cpuVectorWidth() {
    static const int64_t width = at::get_cpu_capability() == "AVX512" ? 32 : 16;
    return width;
}

// 1 for half, 2 for bfloat16, else 0 (pointwise_params.h: where the CPU rounds in between).
int64_t reducedKind(at::ScalarType type) {
    return type == at::kHalf ? 1 : (type == at::kBFloat16 ? 2 : 0);
}

}  // namespace

// add, sub and mul are the most frequent operators of a training step (gradient accumulation, the
// optimizers' slow paths), so their functional and in-place forms are registered directly too:
// one pass over the operands instead of PyTorch's meta function, a dispatched allocation and then
// the out= kernel. Each core takes the output kind; out is undefined for K::Allocate.
at::Tensor addSub(K kind, const at::Tensor& out, const at::Tensor& self, const at::Tensor& other,
                  const c10::Scalar& alpha, bool subtract) {
    const at::ScalarType type = commonType({self, other});
    checkAlpha(type, alpha);
    if (subtract) {
        TORCH_CHECK(
            self.scalar_type() != at::kBool || other.scalar_type() != at::kBool,
            "Subtraction, the `-` operator, with two bool tensors is not supported. Use the "
            "`^` or `logical_xor()` operator instead.");
        TORCH_CHECK(
            self.scalar_type() != at::kBool && other.scalar_type() != at::kBool,
            "Subtraction, the `-` operator, with a bool tensor is not supported. If you "
            "are trying to invert a mask, use the `~` or `logical_not()` operator instead.");
    }
    PointwiseSpec s = spec(mtiaTorchPwAdd);
    s.i[1] = reducedKind(type);
    if (at::isFloatingType(type)) {
        s.f[0] = alphaIn(type, alpha) * (subtract ? -1.0 : 1.0);
        s.i[2] = cpuVectorWidth();
    } else {
        const int64_t a = alpha.toLong();
        s.i[0] = subtract ? static_cast<int64_t>(0ull - static_cast<uint64_t>(a)) : a;
        s.f[0] = static_cast<double>(s.i[0]);
    }
    return runPointwise(s, kind, out, {self, other});
}

namespace {

at::Tensor& addOut(const at::Tensor& self, const at::Tensor& other, const c10::Scalar& alpha,
                   at::Tensor& out) {
    addSub(K::Given, out, self, other, alpha, false);
    return out;
}
at::Tensor& subOut(const at::Tensor& self, const at::Tensor& other, const c10::Scalar& alpha,
                   at::Tensor& out) {
    addSub(K::Given, out, self, other, alpha, true);
    return out;
}
at::Tensor add(const at::Tensor& self, const at::Tensor& other, const c10::Scalar& alpha) {
    return addSub(K::Allocate, {}, self, other, alpha, false);
}
at::Tensor sub(const at::Tensor& self, const at::Tensor& other, const c10::Scalar& alpha) {
    return addSub(K::Allocate, {}, self, other, alpha, true);
}
at::Tensor& addInPlace(at::Tensor& self, const at::Tensor& other, const c10::Scalar& alpha) {
    addSub(K::InPlace, self, self, other, alpha, false);
    return self;
}
at::Tensor& subInPlace(at::Tensor& self, const at::Tensor& other, const c10::Scalar& alpha) {
    addSub(K::InPlace, self, self, other, alpha, true);
    return self;
}

}  // namespace

at::Tensor mulAny(K kind, const at::Tensor& out, const at::Tensor& self, const at::Tensor& other) {
    PointwiseSpec s = spec(mtiaTorchPwMul);
    s.rightScalarInOpMath = true;
    return runPointwise(s, kind, out, {self, other});
}
namespace {

at::Tensor& mulOut(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
    mulAny(K::Given, out, self, other);
    return out;
}
at::Tensor mul(const at::Tensor& self, const at::Tensor& other) {
    return mulAny(K::Allocate, {}, self, other);
}
at::Tensor& mulInPlace(at::Tensor& self, const at::Tensor& other) {
    mulAny(K::InPlace, self, self, other);
    return self;
}

int32_t divOp(std::optional<c10::string_view> mode) {
    if (!mode) return mtiaTorchPwDiv;
    if (*mode == "trunc") return mtiaTorchPwDivTrunc;
    if (*mode == "floor") return mtiaTorchPwDivFloor;
    TORCH_CHECK(false,
                "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '",
                *mode, "'");
}

}  // namespace

at::Tensor divAny(K kind, const at::Tensor& out, const at::Tensor& self, const at::Tensor& other,
                  std::optional<c10::string_view> mode) {
    PointwiseSpec s = spec(divOp(mode), /*integerToFloat=*/!mode.has_value());
    // Half and bfloat16: a divisor that is one value (a CPU scalar, or any one-element tensor,
    // which broadcasts to zero strides) the CPU reads once in float and divides by in float,
    // rounding once; between two tensors its 16-bit operations round each step (trunc: the
    // quotient; floor: every step), which i1 asks the kernel for.
    const bool oneDivisor = other.numel() == 1;
    s.i[1] = oneDivisor ? 0 : reducedKind(commonType({self, other}));
    s.rightScalarInOpMath = !mode.has_value() || oneDivisor;
    // Integer division by zero: the CPU refuses it, which needs the divisor's values; they stay on
    // the device, where the kernel gives -1 (as CUDA does) instead of trapping.
    return runPointwise(s, kind, out, {self, other});
}

namespace {

at::Tensor& divModeOut(const at::Tensor& self, const at::Tensor& other,
                       std::optional<c10::string_view> mode, at::Tensor& out) {
    divAny(K::Given, out, self, other, mode);
    return out;
}
at::Tensor& divOut(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
    return divModeOut(self, other, std::nullopt, out);
}
at::Tensor div(const at::Tensor& self, const at::Tensor& other) {
    return divAny(K::Allocate, {}, self, other, std::nullopt);
}
at::Tensor& divInPlace(at::Tensor& self, const at::Tensor& other) {
    divAny(K::InPlace, self, self, other, std::nullopt);
    return self;
}

// floor_divide is div's floor mode (the CPU's kernel for both).
at::Tensor& floorDivideOut(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
    divAny(K::Given, out, self, other, "floor");
    return out;
}
at::Tensor floorDivide(const at::Tensor& self, const at::Tensor& other) {
    return divAny(K::Allocate, {}, self, other, "floor");
}
at::Tensor& floorDivideInPlace(at::Tensor& self, const at::Tensor& other) {
    divAny(K::InPlace, self, self, other, "floor");
    return self;
}

template <int32_t Op, bool ToFloat>
at::Tensor& binaryOut(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
    runPointwise(spec(Op, ToFloat), K::Given, out, {self, other});
    return out;
}

at::Tensor remainderScalarTensor(const c10::Scalar& self, const at::Tensor& other) {
    return runPointwise(spec(mtiaTorchPwRemainder), K::Allocate, {}, {wrapScalar(self), other});
}

template <int32_t Op>
at::Tensor& bitwiseOut(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
    const at::ScalarType type = commonType({self, other});
    TORCH_CHECK(at::isIntegralType(type, true), "\"bitwise_cpu\" not implemented for '",
                c10::toString(type), "'");
    runPointwise(spec(Op), K::Given, out, {self, other});
    return out;
}

template <int32_t Op>
at::Tensor shiftFn(const at::Tensor& self, const at::Tensor& other) {
    return runPointwise(spec(Op), K::Allocate, {}, {self, other});
}
template <int32_t Op>
at::Tensor shiftScalarFn(const at::Tensor& self, const c10::Scalar& other) {
    return runPointwise(spec(Op), K::Allocate, {}, {self, wrapScalar(other)});
}

template <int32_t Op>
at::Tensor& compareOut(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
    runPointwise(boolResult(Op), K::Given, out, {self, other});
    return out;
}
template <int32_t Op>
at::Tensor& compareScalarOut(const at::Tensor& self, const c10::Scalar& other, at::Tensor& out) {
    runPointwise(boolResult(Op), K::Given, out, {self, wrapScalar(other)});
    return out;
}

void checkIntegerPow(const at::Tensor& self, const c10::Scalar& exponent) {
    if (at::isIntegralType(self.scalar_type(), true) && exponent.isIntegral(true)) {
        TORCH_CHECK(exponent.toLong() >= 0, "Integers to negative integer powers are not allowed.");
    }
}

at::Tensor& powTensorScalarOut(const at::Tensor& self, const c10::Scalar& exponent,
                               at::Tensor& out) {
    checkIntegerPow(self, exponent);
    PointwiseSpec s = spec(mtiaTorchPwPowScalar);
    const at::ScalarType type = commonType({self, wrapScalar(exponent)});
    if (at::isFloatingType(type)) {
        s.f[0] = type == at::kDouble ? exponent.toDouble()
                                     : alphaIn(type == at::kFloat ? type : at::kFloat, exponent);
    } else {
        s.i[0] = exponent.toLong();
    }
    if (exponent.equal(0)) {  // 1 everywhere, NaN included (the CPU's)
        if (!out.sizes().equals(self.sizes())) at::native::resize_output(out, self.sizes());
        s = spec(mtiaTorchPwFill);
        s.f[0] = 1;
        s.i[0] = 1;
        runPointwise(s, K::Given, out, {});
        return out;
    }
    // The exponent takes part in type promotion as a wrapped number (the second operand, which the
    // kernel does not read); the kernel takes its value from s0.
    runPointwise(s, K::Given, out, {self, wrapScalar(exponent)});
    return out;
}

// What the CPU refuses to compute in bool (its kernels have no bool form), named as it names them.
void refuseBool(at::ScalarType type, const char* cpuKernel) {
    TORCH_CHECK(type != at::kBool, "\"", cpuKernel, "\" not implemented for 'Bool'");
}

at::Tensor& powTensorOut(const at::Tensor& self, const at::Tensor& exponent, at::Tensor& out) {
    refuseBool(commonType({self, exponent}), "pow");
    runPointwise(spec(mtiaTorchPwPow), K::Given, out, {self, exponent});
    return out;
}

at::Tensor& powScalarOut(const c10::Scalar& self, const at::Tensor& exponent, at::Tensor& out) {
    refuseBool(commonType({wrapScalar(self), exponent}), "pow");
    runPointwise(spec(mtiaTorchPwPow), K::Given, out, {wrapScalar(self), exponent});
    return out;
}

}  // namespace

at::Tensor lerpScalar(K kind, const at::Tensor& out, const at::Tensor& self, const at::Tensor& end,
                      const c10::Scalar& weight) {
    const at::ScalarType type = commonType({self, end});
    TORCH_CHECK(at::isFloatingType(type), "\"lerp_kernel_scalar\" not implemented for '",
                c10::toString(type), "'");
    PointwiseSpec s = spec(mtiaTorchPwLerpScalar);
    setScalarArg(s, 0, weight);
    return runPointwise(s, kind, out, {self, end});
}

at::Tensor lerpTensor(K kind, const at::Tensor& out, const at::Tensor& self, const at::Tensor& end,
                      const at::Tensor& weight) {
    const at::ScalarType type = commonType({self, end});
    TORCH_CHECK(at::isFloatingType(type), "\"lerp_kernel_tensor\" not implemented for '",
                c10::toString(type), "'");
    return runPointwise(spec(mtiaTorchPwLerpTensor), kind, out, {self, end, weight});
}

at::Tensor addcmul(K kind, const at::Tensor& out, const at::Tensor& self, const at::Tensor& t1,
                   const at::Tensor& t2, const c10::Scalar& value) {
    PointwiseSpec s = spec(mtiaTorchPwAddcmul);
    const at::ScalarType type = commonType({self, t1, t2});
    refuseBool(type, "addcmul_cpu_out");
    if (at::isFloatingType(type)) {
        s.f[0] = alphaIn(at::isReducedFloatingType(type) ? at::kFloat : type, value);
    } else {
        setScalarArg(s, 0, value);
    }
    return runPointwise(s, kind, out, {self, t1, t2});
}

at::Tensor addcdiv(K kind, const at::Tensor& out, const at::Tensor& self, const at::Tensor& t1,
                   const at::Tensor& t2, const c10::Scalar& value) {
    TORCH_CHECK(
        !(at::isIntegralType(t1.scalar_type(), true) && at::isIntegralType(t2.scalar_type(), true)),
        "Integer division with addcdiv is no longer supported, and in a future release "
        "addcdiv will perform a true division of tensor1 and tensor2. The historic "
        "addcdiv behavior can be implemented as (input + value * torch.trunc(tensor1 / "
        "tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / "
        "tensor2) for float inputs. The future addcdiv behavior is just the latter "
        "implementation: (input + value * tensor1 / tensor2), for all dtypes.");
    PointwiseSpec s = spec(mtiaTorchPwAddcdiv);
    const at::ScalarType type = commonType({self, t1, t2});
    s.f[0] = alphaIn(at::isReducedFloatingType(type) ? at::kFloat : type, value);
    return runPointwise(s, kind, out, {self, t1, t2});
}

namespace {

at::Tensor& lerpScalarOut(const at::Tensor& self, const at::Tensor& end, const c10::Scalar& weight,
                          at::Tensor& out) {
    lerpScalar(K::Given, out, self, end, weight);
    return out;
}

at::Tensor& lerpTensorOut(const at::Tensor& self, const at::Tensor& end, const at::Tensor& weight,
                          at::Tensor& out) {
    lerpTensor(K::Given, out, self, end, weight);
    return out;
}

// ---- ternary ----

at::Tensor& addcmulOut(const at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2,
                       const c10::Scalar& value, at::Tensor& out) {
    addcmul(K::Given, out, self, t1, t2, value);
    return out;
}

at::Tensor& addcdivOut(const at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2,
                       const c10::Scalar& value, at::Tensor& out) {
    addcdiv(K::Given, out, self, t1, t2, value);
    return out;
}

// The clamp forms share these, with absent bounds as null pointers (optional temporaries of
// Tensor in the one-bound forms trip GCC's -Wmaybe-uninitialized under TSan's -O2).
at::Tensor& clampScalarsInto(const at::Tensor& self, const c10::Scalar* min, const c10::Scalar* max,
                             at::Tensor& out) {
    TORCH_CHECK(min != nullptr || max != nullptr,
                "torch.clamp: At least one of 'min' or 'max' must not be None");
    refuseBool(commonType({self, min != nullptr ? wrapScalar(*min) : self,
                           max != nullptr ? wrapScalar(*max) : self}),
               min == nullptr ? "clamp_max_scalar_cpu"
                              : (max == nullptr ? "clamp_min_scalar_cpu" : "clamp_scalar_cpu"));
    PointwiseSpec s = spec(mtiaTorchPwClampScalar);
    if (min != nullptr) setScalarArg(s, 0, *min);
    if (max != nullptr) setScalarArg(s, 1, *max);
    s.i[2] = min != nullptr;
    s.i[3] = max != nullptr;
    runPointwise(s, K::Given, out, {self});
    return out;
}

at::Tensor& clampTensorsInto(const at::Tensor& self, const at::Tensor* min, const at::Tensor* max,
                             at::Tensor& out) {
    TORCH_CHECK(min != nullptr || max != nullptr,
                "torch.clamp: At least one of 'min' or 'max' must not be None");
    if (min != nullptr && max != nullptr) refuseBool(commonType({self, *min, *max}), "clamp_cpu");
    PointwiseSpec s = spec(mtiaTorchPwClampTensor);
    s.i[0] = min != nullptr;
    s.i[1] = max != nullptr;
    runPointwise(s, K::Given, out,
                 {self, min != nullptr ? *min : self, max != nullptr ? *max : self});
    return out;
}

at::Tensor& clampOut(const at::Tensor& self, const std::optional<c10::Scalar>& min,
                     const std::optional<c10::Scalar>& max, at::Tensor& out) {
    return clampScalarsInto(self, min ? &*min : nullptr, max ? &*max : nullptr, out);
}

at::Tensor& clampTensorOut(const at::Tensor& self, const std::optional<at::Tensor>& min,
                           const std::optional<at::Tensor>& max, at::Tensor& out) {
    const bool hasMin = min.has_value() && min->defined();
    const bool hasMax = max.has_value() && max->defined();
    return clampTensorsInto(self, hasMin ? &*min : nullptr, hasMax ? &*max : nullptr, out);
}

at::Tensor& clampMinOut(const at::Tensor& self, const c10::Scalar& min, at::Tensor& out) {
    return clampScalarsInto(self, &min, nullptr, out);
}
at::Tensor& clampMaxOut(const at::Tensor& self, const c10::Scalar& max, at::Tensor& out) {
    return clampScalarsInto(self, nullptr, &max, out);
}
at::Tensor& clampMinTensorOut(const at::Tensor& self, const at::Tensor& min, at::Tensor& out) {
    return clampTensorsInto(self, &min, nullptr, out);
}
at::Tensor& clampMaxTensorOut(const at::Tensor& self, const at::Tensor& max, at::Tensor& out) {
    return clampTensorsInto(self, nullptr, &max, out);
}

void checkCondition(const at::Tensor& condition) {
    TORCH_CHECK(condition.scalar_type() == at::kBool || condition.scalar_type() == at::kByte,
                "where expected condition to be a boolean tensor, but got a tensor with dtype ",
                condition.scalar_type());
}

PointwiseSpec whereSpec() {
    PointwiseSpec s = spec(mtiaTorchPwWhere);
    s.promoteFrom = 1;
    return s;
}

at::Tensor where(const at::Tensor& condition, const at::Tensor& self, const at::Tensor& other) {
    checkCondition(condition);
    return runPointwise(whereSpec(), K::Allocate, {}, {condition, self, other});
}

at::Tensor& whereOut(const at::Tensor& condition, const at::Tensor& self, const at::Tensor& other,
                     at::Tensor& out) {
    checkCondition(condition);
    runPointwise(whereSpec(), K::Given, out, {condition, self, other});
    return out;
}

void checkMask(const at::Tensor& self, const at::Tensor& mask) {
    TORCH_CHECK(mask.scalar_type() == at::kBool,
                "masked_fill_ only supports boolean masks, but got mask with dtype ",
                mask.scalar_type());
    TORCH_CHECK(at::infer_size(self.sizes(), mask.sizes()) == self.sizes(),
                "masked_fill_: the mask of shape ", mask.sizes(),
                " does not broadcast to the tensor's shape ", self.sizes());
}

at::Tensor& maskedFillScalar(at::Tensor& self, const at::Tensor& mask, const c10::Scalar& value) {
    checkMask(self, mask);
    // The value in self's dtype, as the CPU converts it (not a wrapped number: no promotion).
    const at::Tensor v = at::scalar_tensor(value, at::TensorOptions().dtype(self.scalar_type()));
    runPointwise(whereSpec(), K::InPlace, self, {mask, v, self});
    return self;
}

at::Tensor& maskedFillTensor(at::Tensor& self, const at::Tensor& mask, const at::Tensor& value) {
    TORCH_CHECK(value.dim() == 0,
                "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
                value.dim(), " dimension(s).");
    checkMask(self, mask);
    at::Tensor v = value;
    if (v.scalar_type() != self.scalar_type()) v = v.to(self.scalar_type());
    runPointwise(whereSpec(), K::InPlace, self, {mask, v, self});
    return self;
}

// ---- activations ----

at::Tensor relu(const at::Tensor& self) {
    return runPointwise(spec(mtiaTorchPwRelu), K::Allocate, {}, {self});
}
at::Tensor& reluInPlace(at::Tensor& self) {
    runPointwise(spec(mtiaTorchPwRelu), K::InPlace, self, {self});
    return self;
}

PointwiseSpec hardtanhSpec(const c10::Scalar& lo, const c10::Scalar& hi) {
    PointwiseSpec s = spec(mtiaTorchPwHardtanh);
    setScalarArg(s, 0, lo);
    setScalarArg(s, 1, hi);
    return s;
}
at::Tensor hardtanh(const at::Tensor& self, const c10::Scalar& lo, const c10::Scalar& hi) {
    return runPointwise(hardtanhSpec(lo, hi), K::Allocate, {}, {self});
}
at::Tensor& hardtanhInPlace(at::Tensor& self, const c10::Scalar& lo, const c10::Scalar& hi) {
    runPointwise(hardtanhSpec(lo, hi), K::InPlace, self, {self});
    return self;
}
at::Tensor& hardtanhOut(const at::Tensor& self, const c10::Scalar& lo, const c10::Scalar& hi,
                        at::Tensor& out) {
    runPointwise(hardtanhSpec(lo, hi), K::Given, out, {self});
    return out;
}

at::Tensor hardswish(const at::Tensor& self) {
    return runPointwise(spec(mtiaTorchPwHardswish), K::Allocate, {}, {self});
}
at::Tensor& hardswishInPlace(at::Tensor& self) {
    runPointwise(spec(mtiaTorchPwHardswish), K::InPlace, self, {self});
    return self;
}
at::Tensor& hardswishOut(const at::Tensor& self, at::Tensor& out) {
    runPointwise(spec(mtiaTorchPwHardswish), K::Given, out, {self});
    return out;
}

at::Tensor& geluOut(const at::Tensor& self, c10::string_view approximate, at::Tensor& out) {
    TORCH_CHECK(approximate == "none" || approximate == "tanh",
                "approximate argument must be either none or tanh.");
    runPointwise(spec(approximate == "tanh" ? mtiaTorchPwGeluTanh : mtiaTorchPwGelu), K::Given, out,
                 {self});
    return out;
}

at::Tensor& softplusOut(const at::Tensor& self, const c10::Scalar& beta,
                        const c10::Scalar& threshold, at::Tensor& out) {
    PointwiseSpec s = spec(mtiaTorchPwSoftplus);
    setScalarArg(s, 0, beta);
    setScalarArg(s, 1, threshold);
    runPointwise(s, K::Given, out, {self});
    return out;
}

at::Tensor& leakyReluOut(const at::Tensor& self, const c10::Scalar& slope, at::Tensor& out) {
    PointwiseSpec s = spec(mtiaTorchPwLeakyRelu);
    setScalarArg(s, 0, slope);
    runPointwise(s, K::Given, out, {self});
    return out;
}

at::Tensor& eluOut(const at::Tensor& self, const c10::Scalar& alpha, const c10::Scalar& scale,
                   const c10::Scalar& inputScale, at::Tensor& out) {
    PointwiseSpec s = spec(mtiaTorchPwElu);
    setScalarArg(s, 0, alpha);
    setScalarArg(s, 1, scale);
    setScalarArg(s, 2, inputScale);
    runPointwise(s, K::Given, out, {self});
    return out;
}

at::Tensor& thresholdOut(const at::Tensor& self, const c10::Scalar& threshold,
                         const c10::Scalar& value, at::Tensor& out) {
    PointwiseSpec s = spec(mtiaTorchPwThreshold);
    setScalarArg(s, 0, threshold);
    setScalarArg(s, 1, value);
    runPointwise(s, K::Given, out, {self});
    return out;
}

// ---- backwards ----

// The threshold compared in the computation's opmath type (0.1 as a float32 is 0.100000001...).
double opmathValue(const c10::Scalar& v, at::ScalarType type) {
    return at::scalar_tensor(v, at::TensorOptions().dtype(at::toOpMathType(type)))
        .item()
        .toDouble();
}

at::Tensor& thresholdBackwardOut(const at::Tensor& grad, const at::Tensor& self,
                                 const c10::Scalar& threshold, at::Tensor& out) {
    PointwiseSpec s = spec(mtiaTorchPwThresholdBackward);
    const at::ScalarType type = commonType({grad, self});
    if (at::isFloatingType(type)) {
        s.f[0] = opmathValue(threshold, type);
    } else {
        setScalarArg(s, 0, threshold);
    }
    runPointwise(s, K::Given, out, {grad, self});
    return out;
}

at::Tensor& geluBackwardOut(const at::Tensor& grad, const at::Tensor& self,
                            c10::string_view approximate, at::Tensor& out) {
    PointwiseSpec s = spec(mtiaTorchPwGeluBackward);
    s.i[0] = approximate == "tanh";
    runPointwise(s, K::Given, out, {grad, self});
    return out;
}

template <int32_t Op>
at::Tensor& gradOut(const at::Tensor& grad, const at::Tensor& other, at::Tensor& out) {
    runPointwise(spec(Op), K::Given, out, {grad, other});
    return out;
}

at::Tensor& softplusBackwardOut(const at::Tensor& grad, const at::Tensor& self,
                                const c10::Scalar& beta, const c10::Scalar& threshold,
                                at::Tensor& out) {
    PointwiseSpec s = spec(mtiaTorchPwSoftplusBackward);
    setScalarArg(s, 0, beta);
    setScalarArg(s, 1, threshold);
    runPointwise(s, K::Given, out, {grad, self});
    return out;
}

at::Tensor& leakyReluBackwardOut(const at::Tensor& grad, const at::Tensor& self,
                                 const c10::Scalar& slope, bool selfIsResult, at::Tensor& out) {
    TORCH_CHECK(!selfIsResult || slope.toDouble() >= 0.0,
                "In-place leakyReLu backward calculation is triggered with a negative slope which "
                "is not supported. This is caused by calling in-place forward function with a "
                "negative slope, please call out-of-place version instead. File an issue at "
                "https://github.com/pytorch/pytorch if you do require supporting in-place leakRelu "
                "backward calculation with negative slope");
    PointwiseSpec s = spec(mtiaTorchPwLeakyReluBackward);
    setScalarArg(s, 0, slope);
    runPointwise(s, K::Given, out, {grad, self});
    return out;
}

at::Tensor& eluBackwardOut(const at::Tensor& grad, const c10::Scalar& alpha,
                           const c10::Scalar& scale, const c10::Scalar& inputScale, bool isResult,
                           const at::Tensor& selfOrResult, at::Tensor& out) {
    TORCH_CHECK(!isResult || alpha.toDouble() >= 0.0,
                "In-place elu backward calculation is triggered with a negative slope which is not "
                "supported. This is caused by calling in-place forward function with a negative "
                "slope, please call out-of-place version instead.");
    PointwiseSpec s = spec(mtiaTorchPwEluBackward);
    setScalarArg(s, 0, alpha);
    setScalarArg(s, 1, scale);
    setScalarArg(s, 2, inputScale);
    s.i[0] = isResult;
    runPointwise(s, K::Given, out, {grad, selfOrResult});
    return out;
}

PointwiseSpec hardtanhBackwardSpec(const c10::Scalar& lo, const c10::Scalar& hi) {
    PointwiseSpec s = spec(mtiaTorchPwHardtanhBackward);
    setScalarArg(s, 0, lo);
    setScalarArg(s, 1, hi);
    return s;
}
at::Tensor hardtanhBackward(const at::Tensor& grad, const at::Tensor& self, const c10::Scalar& lo,
                            const c10::Scalar& hi) {
    return runPointwise(hardtanhBackwardSpec(lo, hi), K::Allocate, {}, {grad, self});
}
at::Tensor& hardtanhBackwardOut(const at::Tensor& grad, const at::Tensor& self,
                                const c10::Scalar& lo, const c10::Scalar& hi, at::Tensor& out) {
    runPointwise(hardtanhBackwardSpec(lo, hi), K::Given, out, {grad, self});
    return out;
}

at::Tensor hardswishBackward(const at::Tensor& grad, const at::Tensor& self) {
    return runPointwise(spec(mtiaTorchPwHardswishBackward), K::Allocate, {}, {grad, self});
}
at::Tensor& hardswishBackwardOut(const at::Tensor& grad, const at::Tensor& self, at::Tensor& out) {
    runPointwise(spec(mtiaTorchPwHardswishBackward), K::Given, out, {grad, self});
    return out;
}

// ---- fill ----

at::Tensor& fillScalar(at::Tensor& self, const c10::Scalar& value) {
    if (self.numel() == 0) return self;
    PointwiseSpec s = spec(mtiaTorchPwFill);
    const at::ScalarType type = self.scalar_type();
    if (at::isFloatingType(type)) {
        s.f[0] = type == at::kFloat ? static_cast<double>(value.toFloat()) : value.toDouble();
    } else {
        // Converted as the CPU converts (an out-of-range integer is refused there too).
        const at::Tensor v = at::scalar_tensor(value, at::TensorOptions().dtype(type));
        setScalarArg(s, 0, v.item());
    }
    runPointwise(s, K::InPlace, self, {});
    return self;
}

at::Tensor& fillTensor(at::Tensor& self, const at::Tensor& value) {
    TORCH_CHECK(value.dim() == 0,
                "fill_ only supports 0-dimension value tensor but got tensor with ", value.dim(),
                " dimensions.");
    if (value.device().is_cpu()) return fillScalar(self, value.item());
    if (self.numel() == 0) return self;
    PointwiseSpec s = spec(mtiaTorchPwCopy);
    s.resultType = self.scalar_type();
    runPointwise(s, K::InPlace, self, {value.expand(self.sizes())});
    return self;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, MTIA, m) {
#define UNARY(name, op, toFloat) m.impl(name ".out", TORCH_FN((unaryOut<op, toFloat>)))
    m.impl("abs.out", TORCH_FN(absOut));
    m.impl("neg.out", TORCH_FN(negOut));
    UNARY("exp", mtiaTorchPwExp, true);
    UNARY("exp2", mtiaTorchPwExp2, true);
    UNARY("expm1", mtiaTorchPwExpm1, true);
    UNARY("log", mtiaTorchPwLog, true);
    UNARY("log2", mtiaTorchPwLog2, true);
    UNARY("log10", mtiaTorchPwLog10, true);
    UNARY("log1p", mtiaTorchPwLog1p, true);
    UNARY("sqrt", mtiaTorchPwSqrt, true);
    UNARY("rsqrt", mtiaTorchPwRsqrt, true);
    UNARY("sin", mtiaTorchPwSin, true);
    UNARY("cos", mtiaTorchPwCos, true);
    UNARY("tan", mtiaTorchPwTan, true);
    UNARY("asin", mtiaTorchPwAsin, true);
    UNARY("acos", mtiaTorchPwAcos, true);
    UNARY("atan", mtiaTorchPwAtan, true);
    UNARY("sinh", mtiaTorchPwSinh, true);
    UNARY("cosh", mtiaTorchPwCosh, true);
    UNARY("tanh", mtiaTorchPwTanh, true);
    UNARY("asinh", mtiaTorchPwAsinh, true);
    UNARY("acosh", mtiaTorchPwAcosh, true);
    UNARY("atanh", mtiaTorchPwAtanh, true);
    UNARY("erf", mtiaTorchPwErf, true);
    UNARY("erfc", mtiaTorchPwErfc, true);
    UNARY("sigmoid", mtiaTorchPwSigmoid, true);
    UNARY("reciprocal", mtiaTorchPwReciprocal, true);
    UNARY("sign", mtiaTorchPwSign, false);
    UNARY("sgn", mtiaTorchPwSgn, false);
    UNARY("silu", mtiaTorchPwSilu, false);
    UNARY("hardsigmoid", mtiaTorchPwHardsigmoid, false);
#undef UNARY
    m.impl("floor.out", TORCH_FN(roundingOut<mtiaTorchPwFloor>));
    m.impl("ceil.out", TORCH_FN(roundingOut<mtiaTorchPwCeil>));
    m.impl("round.out", TORCH_FN(roundingOut<mtiaTorchPwRound>));
    m.impl("round.decimals_out", TORCH_FN(roundDecimalsOut));
    m.impl("trunc.out", TORCH_FN(roundingOut<mtiaTorchPwTrunc>));
    m.impl("frac.out", TORCH_FN(fracOut));
    m.impl("bitwise_not.out", TORCH_FN(bitwiseNotOut));
    m.impl("logical_not.out", TORCH_FN(boolUnaryOut<mtiaTorchPwLogicalNot>));
    m.impl("isposinf.out", TORCH_FN(boolUnaryOut<mtiaTorchPwIsPosInf>));
    m.impl("isneginf.out", TORCH_FN(boolUnaryOut<mtiaTorchPwIsNegInf>));
    m.impl("signbit.out", TORCH_FN(boolUnaryOut<mtiaTorchPwSignbit>));
    m.impl("isnan", TORCH_FN(isnan));
    m.impl("nan_to_num.out", TORCH_FN(nanToNumOut));

    m.impl("add.out", TORCH_FN(addOut));
    m.impl("add.Tensor", TORCH_FN(add));
    m.impl("add_.Tensor", TORCH_FN(addInPlace));
    m.impl("sub.out", TORCH_FN(subOut));
    m.impl("sub.Tensor", TORCH_FN(sub));
    m.impl("sub_.Tensor", TORCH_FN(subInPlace));
    m.impl("mul.out", TORCH_FN(mulOut));
    m.impl("mul.Tensor", TORCH_FN(mul));
    m.impl("mul_.Tensor", TORCH_FN(mulInPlace));
    m.impl("div.out", TORCH_FN(divOut));
    m.impl("div.Tensor", TORCH_FN(div));
    m.impl("div_.Tensor", TORCH_FN(divInPlace));
    m.impl("div.out_mode", TORCH_FN(divModeOut));
    m.impl("floor_divide", TORCH_FN(floorDivide));
    m.impl("floor_divide_.Tensor", TORCH_FN(floorDivideInPlace));
    m.impl("floor_divide.out", TORCH_FN(floorDivideOut));
    m.impl("remainder.Tensor_out", TORCH_FN((binaryOut<mtiaTorchPwRemainder, false>)));
    m.impl("remainder.Scalar_Tensor", TORCH_FN(remainderScalarTensor));
    m.impl("fmod.Tensor_out", TORCH_FN((binaryOut<mtiaTorchPwFmod, false>)));
    m.impl("pow.Tensor_Tensor_out", TORCH_FN(powTensorOut));
    m.impl("pow.Tensor_Scalar_out", TORCH_FN(powTensorScalarOut));
    m.impl("pow.Scalar_out", TORCH_FN(powScalarOut));
    m.impl("maximum.out", TORCH_FN((binaryOut<mtiaTorchPwMaximum, false>)));
    m.impl("minimum.out", TORCH_FN((binaryOut<mtiaTorchPwMinimum, false>)));
    m.impl("fmax.out", TORCH_FN((binaryOut<mtiaTorchPwFmax, false>)));
    m.impl("fmin.out", TORCH_FN((binaryOut<mtiaTorchPwFmin, false>)));
    m.impl("atan2.out", TORCH_FN((binaryOut<mtiaTorchPwAtan2, true>)));
    m.impl("hypot.out", TORCH_FN((binaryOut<mtiaTorchPwHypot, true>)));
    m.impl("copysign.out", TORCH_FN((binaryOut<mtiaTorchPwCopysign, true>)));
    m.impl("xlogy.OutTensor", TORCH_FN((binaryOut<mtiaTorchPwXlogy, true>)));
#define COMPARE(name, op)                                                                          \
    m.impl(name ".Tensor_out", TORCH_FN(compareOut<op>));                                          \
    m.impl(name ".Scalar_out", TORCH_FN(compareScalarOut<op>))
    COMPARE("eq", mtiaTorchPwEq);
    COMPARE("ne", mtiaTorchPwNe);
    COMPARE("lt", mtiaTorchPwLt);
    COMPARE("le", mtiaTorchPwLe);
    COMPARE("gt", mtiaTorchPwGt);
    COMPARE("ge", mtiaTorchPwGe);
#undef COMPARE
    m.impl("logical_and.out", TORCH_FN(compareOut<mtiaTorchPwLogicalAnd>));
    m.impl("logical_or.out", TORCH_FN(compareOut<mtiaTorchPwLogicalOr>));
    m.impl("logical_xor.out", TORCH_FN(compareOut<mtiaTorchPwLogicalXor>));
    m.impl("bitwise_and.Tensor_out", TORCH_FN(bitwiseOut<mtiaTorchPwBitwiseAnd>));
    m.impl("bitwise_or.Tensor_out", TORCH_FN(bitwiseOut<mtiaTorchPwBitwiseOr>));
    m.impl("bitwise_xor.Tensor_out", TORCH_FN(bitwiseOut<mtiaTorchPwBitwiseXor>));
    m.impl("bitwise_left_shift.Tensor_out", TORCH_FN(bitwiseOut<mtiaTorchPwLshift>));
    m.impl("bitwise_right_shift.Tensor_out", TORCH_FN(bitwiseOut<mtiaTorchPwRshift>));
    m.impl("__lshift__.Tensor", TORCH_FN(shiftFn<mtiaTorchPwLshift>));
    m.impl("__rshift__.Tensor", TORCH_FN(shiftFn<mtiaTorchPwRshift>));
    m.impl("__lshift__.Scalar", TORCH_FN(shiftScalarFn<mtiaTorchPwLshift>));
    m.impl("__rshift__.Scalar", TORCH_FN(shiftScalarFn<mtiaTorchPwRshift>));
    m.impl("lerp.Scalar_out", TORCH_FN(lerpScalarOut));
    m.impl("lerp.Tensor_out", TORCH_FN(lerpTensorOut));

    m.impl("addcmul.out", TORCH_FN(addcmulOut));
    m.impl("addcdiv.out", TORCH_FN(addcdivOut));
    m.impl("clamp.out", TORCH_FN(clampOut));
    m.impl("clamp.Tensor_out", TORCH_FN(clampTensorOut));
    m.impl("clamp_min.out", TORCH_FN(clampMinOut));
    m.impl("clamp_max.out", TORCH_FN(clampMaxOut));
    m.impl("clamp_min.Tensor_out", TORCH_FN(clampMinTensorOut));
    m.impl("clamp_max.Tensor_out", TORCH_FN(clampMaxTensorOut));
    m.impl("where.self", TORCH_FN(where));
    m.impl("where.self_out", TORCH_FN(whereOut));
    m.impl("masked_fill_.Scalar", TORCH_FN(maskedFillScalar));
    m.impl("masked_fill_.Tensor", TORCH_FN(maskedFillTensor));

    m.impl("relu", TORCH_FN(relu));
    m.impl("relu_", TORCH_FN(reluInPlace));
    m.impl("hardtanh", TORCH_FN(hardtanh));
    m.impl("hardtanh_", TORCH_FN(hardtanhInPlace));
    m.impl("hardtanh.out", TORCH_FN(hardtanhOut));
    m.impl("hardswish", TORCH_FN(hardswish));
    m.impl("hardswish_", TORCH_FN(hardswishInPlace));
    m.impl("hardswish.out", TORCH_FN(hardswishOut));
    m.impl("gelu.out", TORCH_FN(geluOut));
    m.impl("softplus.out", TORCH_FN(softplusOut));
    m.impl("leaky_relu.out", TORCH_FN(leakyReluOut));
    m.impl("elu.out", TORCH_FN(eluOut));
    m.impl("threshold.out", TORCH_FN(thresholdOut));

    m.impl("threshold_backward.grad_input", TORCH_FN(thresholdBackwardOut));
    m.impl("gelu_backward.grad_input", TORCH_FN(geluBackwardOut));
    m.impl("silu_backward.grad_input", TORCH_FN(gradOut<mtiaTorchPwSiluBackward>));
    m.impl("sigmoid_backward.grad_input", TORCH_FN(gradOut<mtiaTorchPwSigmoidBackward>));
    m.impl("tanh_backward.grad_input", TORCH_FN(gradOut<mtiaTorchPwTanhBackward>));
    m.impl("hardsigmoid_backward.grad_input", TORCH_FN(gradOut<mtiaTorchPwHardsigmoidBackward>));
    m.impl("softplus_backward.grad_input", TORCH_FN(softplusBackwardOut));
    m.impl("leaky_relu_backward.grad_input", TORCH_FN(leakyReluBackwardOut));
    m.impl("elu_backward.grad_input", TORCH_FN(eluBackwardOut));
    m.impl("hardtanh_backward", TORCH_FN(hardtanhBackward));
    m.impl("hardtanh_backward.grad_input", TORCH_FN(hardtanhBackwardOut));
    m.impl("hardswish_backward", TORCH_FN(hardswishBackward));
    m.impl("hardswish_backward.out", TORCH_FN(hardswishBackwardOut));

    m.impl("fill_.Scalar", TORCH_FN(fillScalar));
    m.impl("fill_.Tensor", TORCH_FN(fillTensor));
}

}  // namespace torch_mtia
