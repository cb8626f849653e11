// The pointwise kernel: one operation (pointwise_params.h) element by element over a strided index
// space. Each block takes an even share of the elements in iteration order and walks it row by row
// (dimension 0); each row goes in chunks through three typed steps: load the inputs into buffers of
// the computation type (converting from their dtypes and strides; contiguous inputs of that type
// are read in place), apply the operation over the buffers (a plain loop the compiler vectorises),
// store into the output's dtype with the CPU's conversions. Half and bfloat16 thus compute in float
// and round once, at the store.
#include "dtype_access.h"
#include "pointwise_params.h"

#include <cmath>
#include <limits>
#include <type_traits>

namespace {

using namespace mtia_kernels;

constexpr int64_t kChunk = 512;

struct Scalars {
    double f[4];
    int64_t i[4];
};

template <class C>
constexpr bool kIntegral = std::is_integral_v<C>;

// Integer arithmetic wraps around as the CPU's does, without undefined behaviour.
template <class C>
C wadd(C a, C b) {
    if constexpr (kIntegral<C>) {
        return static_cast<C>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
    } else {
        return a + b;
    }
}
template <class C>
C wsub(C a, C b) {
    if constexpr (kIntegral<C>) {
        return static_cast<C>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
    } else {
        return a - b;
    }
}
template <class C>
C wmul(C a, C b) {
    if constexpr (kIntegral<C>) {
        return static_cast<C>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
    } else {
        return a * b;
    }
}

template <class C>
C scalar(const Scalars& s, int k) {
    if constexpr (kIntegral<C>) {
        return static_cast<C>(s.i[k]);
    } else {
        return static_cast<C>(s.f[k]);
    }
}

// Python's floor division and modulo (the CPU's div_floor and remainder): the quotient rounded
// toward negative infinity, the remainder with the divisor's sign.
template <class C>
C floorDiv(C a, C b) {
    if constexpr (kIntegral<C>) {
        if (b == 0) return a == 0 ? 0 : -1;  // no trap; CUDA gives all ones as well
        if (b == -1) return wsub<C>(0, a);
        const C q = a / b;
        return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
    } else {
        if (b == 0) return a / b;
        C mod = std::fmod(a, b);
        C div = (a - mod) / b;
        if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;
        if (div == 0) return std::copysign(C(0), a / b);
        C floordiv = std::floor(div);
        if (div - floordiv > C(0.5)) floordiv += 1;
        return floordiv;
    }
}

template <class C>
C remainderOf(C a, C b) {
    if constexpr (kIntegral<C>) {
        if (b == 0 || b == -1) return 0;
        const C r = a % b;
        return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
    } else {
        C mod = std::fmod(a, b);
        if (mod != 0 && ((b < 0) != (mod < 0))) mod += b;
        return mod;
    }
}

template <class C>
C truncDiv(C a, C b) {
    if constexpr (kIntegral<C>) {
        if (b == 0) return a == 0 ? 0 : -1;
        if (b == -1) return wsub<C>(0, a);
        return a / b;
    } else {
        return std::trunc(a / b);
    }
}

template <class C>
C fmodOf(C a, C b) {
    if constexpr (kIntegral<C>) {
        if (b == 0 || b == -1) return 0;
        return a % b;
    } else {
        return std::fmod(a, b);
    }
}

// Integer powers by squaring; negative exponents give 0 except for bases 1 and -1 (the CPU's).
template <class C>
C powOf(C a, C b) {
    if constexpr (kIntegral<C>) {
        if (b < 0) {
            if (a == 1) return 1;
            if (a == -1) return (b % 2 == 0) ? 1 : -1;
            return 0;
        }
        C result = 1;
        C base = a;
        while (b != 0) {
            if (b & 1) result = wmul(result, base);
            base = wmul(base, base);
            b >>= 1;
        }
        return result;
    } else {
        return std::pow(a, b);
    }
}

// x ** e for a scalar exponent, with the CPU's special cases (exact squares, square roots,
// reciprocals), which differ from std::pow in the last bit.
template <class C>
C powScalar(C x, C e) {
    if constexpr (kIntegral<C>) {
        return powOf(x, e);
    } else {
        if (e == C(2)) return x * x;
        if (e == C(3)) return x * x * x;
        if (e == C(0.5)) return std::sqrt(x);
        if (e == C(-0.5)) return C(1) / std::sqrt(x);
        if (e == C(-1)) return C(1) / x;
        if (e == C(-2)) return C(1) / (x * x);
        return std::pow(x, e);
    }
}

template <class C>
C maxProp(C a, C b) {
    if constexpr (!kIntegral<C>) {
        if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<C>::quiet_NaN();
    }
    return a > b ? a : b;
}
template <class C>
C minProp(C a, C b) {
    if constexpr (!kIntegral<C>) {
        if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<C>::quiet_NaN();
    }
    return a < b ? a : b;
}

template <class C>
bool isNan(C v) {
    if constexpr (kIntegral<C>) {
        return false;
    } else {
        return std::isnan(v);
    }
}

template <class C>
C clampOf(C x, bool hasLo, C lo, bool hasHi, C hi) {
    if (isNan(x)) return x;
    if (hasLo) {
        if (isNan(lo)) return lo;
        x = x < lo ? lo : x;
    }
    if (hasHi) {
        if (isNan(hi)) return hi;
        x = x > hi ? hi : x;
    }
    return x;
}

template <class C>
C lerpOf(C a, C b, C w) {
    if constexpr (kIntegral<C>) {
        return a + w * (b - a);
    } else {
        return std::abs(w) < C(0.5) ? a + w * (b - a) : b - (b - a) * (C(1) - w);
    }
}

// Round half to even, as the CPU's round (std::nearbyint in the default rounding mode).
template <class C>
C roundEven(C x) {
    return std::nearbyint(x);
}

template <class C>
C geluOf(C x) {
    return C(0.5) * x * (C(1) + std::erf(x * C(M_SQRT1_2)));
}
template <class C>
C geluTanhOf(C x) {
    const C k = C(M_SQRT2 * M_2_SQRTPI * 0.5);
    const C inner = k * (x + C(0.044715) * x * x * x);
    return C(0.5) * x * (C(1) + std::tanh(inner));
}
template <class C>
C geluBackwardOf(C g, C x, bool tanhApprox) {
    if (tanhApprox) {
        const C k = C(M_SQRT2 * M_2_SQRTPI * 0.5);
        const C c = C(0.044715);
        const C x2 = x * x;
        const C inner = k * (x + c * x2 * x);
        const C t = std::tanh(inner);
        const C left = C(0.5) * x;
        const C right = C(1) + t;
        const C leftDerivative = C(0.5) * right;
        const C tanhDerivative = C(1) - t * t;
        const C innerDerivative = k * (C(1) + C(3) * c * x2);
        return g * (leftDerivative + left * tanhDerivative * innerDerivative);
    }
    const C cdf = C(0.5) * (C(1) + std::erf(x * C(M_SQRT1_2)));
    const C pdf = std::exp(C(-0.5) * x * x) * C(M_2_SQRTPI * M_SQRT1_2 * 0.5);
    return g * (cdf + x * pdf);
}

template <class C>
C sigmoidOf(C x) {
    return C(1) / (C(1) + std::exp(-x));
}

// x + alpha * y in floats: the CPU computes it as one fused multiply-add, which equals a plain add
// or subtract for alpha = +-1 (kept apart so that the common case vectorises).
// Rounds a float to half (kind 1) or bfloat16 (kind 2) and back: the CPU's half and bfloat16
// vector arithmetic rounds after each operation of some kernels, which the device matches there.
inline float roundToReduced(float v, int64_t kind) {
    return kind == 1 ? halfToFloat(floatToHalf(v)) : bf16ToFloat(floatToBf16(v));
}

// Python's floor division as the CPU computes it in half or bfloat16 between two tensors: each step
// (fmod, the difference, the quotient, the corrections) rounded to the dtype, as its 16-bit
// vectors and scalars round every operation (measured: 8.84375 // -0.0045967 gives -1923, where
// float steps give -1924).
inline float floorDivReduced(float a, float b, int64_t kind) {
    auto r = [kind](float v) { return roundToReduced(v, kind); };
    if (b == 0) return a / b;
    const float mod = r(std::fmod(a, b));
    float div = r(r(a - mod) / b);
    if (mod != 0 && ((b < 0) != (mod < 0))) div = r(div - 1);
    if (div == 0) return std::copysign(0.0f, a / b);
    float floordiv = std::floor(div);
    if (r(div - floordiv) > 0.5f) floordiv = r(floordiv + 1);
    return floordiv;
}

template <class C>
void addLoop(C* o, const C* x, const C* y, const C*, int64_t n, const Scalars& s) {
    const C alpha = static_cast<C>(s.f[0]);
    if (s.i[1] != 0 && alpha != C(1)) {
        // Half/bfloat16 as the CPU computes them: its vector loop (the first i3 elements of this
        // chunk) fuses the multiply-add in float; its scalar tail rounds alpha * y to the dtype,
        // then the sum.
        const int64_t fused = std::min<int64_t>(n, s.i[3]);
        for (int64_t k = 0; k < fused; ++k) o[k] = std::fma(y[k], alpha, x[k]);
        for (int64_t k = fused; k < n; ++k) {
            o[k] = x[k] + static_cast<C>(roundToReduced(static_cast<float>(alpha * y[k]), s.i[1]));
        }
    } else if (alpha == C(1)) {
        for (int64_t k = 0; k < n; ++k) o[k] = x[k] + y[k];
    } else if (alpha == C(-1)) {
        for (int64_t k = 0; k < n; ++k) o[k] = x[k] - y[k];
    } else {
        for (int64_t k = 0; k < n; ++k) o[k] = std::fma(y[k], alpha, x[k]);
    }
}

// One operation over n buffered elements: o[k] = f(x[k], y[k], z[k]).
template <class C>
using ApplyFn = void (*)(C* o, const C* x, const C* y, const C* z, int64_t n, const Scalars& s);

// The inputs are read before the operation, every element, and the scalars once per call: loops
// without loads under a condition, which the compiler turns into vector selects (a branch per
// element costs a misprediction on data of random signs).
#define PW_LOOP(body)                                                                              \
    [](C* o, const C* x, const C* y, const C* z, int64_t n, const Scalars& s) {                    \
        const C s0 = scalar<C>(s, 0), s1 = scalar<C>(s, 1), s2 = scalar<C>(s, 2);                  \
        (void)x, (void)y, (void)z, (void)s, (void)s0, (void)s1, (void)s2;                          \
        for (int64_t k = 0; k < n; ++k) {                                                          \
            const C xk = x[k], yk = y[k], zk = z[k];                                               \
            (void)xk, (void)yk, (void)zk;                                                          \
            body;                                                                                  \
        }                                                                                          \
    }

// Ops valid for each computation type: the table gives nullptr where the host never asks (a
// floating function of integers is promoted to float on the host; bitwise ops take no floats).
template <class C>
ApplyFn<C> applyFor(int32_t op) {
    constexpr bool I = kIntegral<C>;
    switch (op) {
    case mtiaTorchPwFill: return PW_LOOP(o[k] = s0);
    case mtiaTorchPwCopy: return PW_LOOP(o[k] = xk);
    case mtiaTorchPwNeg: return PW_LOOP(o[k] = wsub<C>(0, xk));
    case mtiaTorchPwAbs: return PW_LOOP(o[k] = xk < 0 ? wsub<C>(0, xk) : (I ? xk : std::abs(xk)));
    case mtiaTorchPwSign:
    case mtiaTorchPwSgn: return PW_LOOP(o[k] = static_cast<C>((C(0) < xk) - (xk < C(0))));
    case mtiaTorchPwLogicalNot: return PW_LOOP(o[k] = xk == C(0) ? 1 : 0);
    case mtiaTorchPwIsNan: return PW_LOOP(o[k] = isNan(xk) ? 1 : 0);
    case mtiaTorchPwRelu: return PW_LOOP(o[k] = xk < C(0) ? C(0) : xk);
    case mtiaTorchPwLeakyRelu: return PW_LOOP(o[k] = xk > C(0) ? xk : xk * s0);
    case mtiaTorchPwHardtanh: return PW_LOOP(o[k] = clampOf(xk, true, s0, true, s1));
    case mtiaTorchPwThreshold: return PW_LOOP(o[k] = xk <= s0 ? s1 : xk);
    case mtiaTorchPwClampScalar:
        return PW_LOOP(o[k] = clampOf(xk, s.i[2] != 0, s0, s.i[3] != 0, s1));
    case mtiaTorchPwPowScalar: return PW_LOOP(o[k] = powScalar(xk, s0));
    case mtiaTorchPwScalarPow: return PW_LOOP(o[k] = powOf(s0, xk));
    case mtiaTorchPwAddScalar: return PW_LOOP(o[k] = wadd(xk, s0));
    case mtiaTorchPwMulScalar: return PW_LOOP(o[k] = wmul(xk, s0));
    case mtiaTorchPwAdd:
        if constexpr (!I) return addLoop<C>;
        return PW_LOOP(o[k] = wadd(xk, wmul(s0, yk)));
    case mtiaTorchPwMul: return PW_LOOP(o[k] = wmul(xk, yk));
    case mtiaTorchPwDivTrunc:
        if constexpr (!I) {  // half/bfloat16 (i1): the quotient rounded before the truncation
            return PW_LOOP(o[k] = s.i[1] != 0 ? std::trunc(static_cast<C>(roundToReduced(
                                                    static_cast<float>(xk / yk), s.i[1])))
                                              : truncDiv(xk, yk));
        }
        return PW_LOOP(o[k] = truncDiv(xk, yk));
    case mtiaTorchPwDivFloor:
        if constexpr (!I) {  // half/bfloat16 (i1): every step rounded, as the CPU's 16-bit vectors
            return PW_LOOP(o[k] = s.i[1] != 0
                                      ? static_cast<C>(floorDivReduced(
                                            static_cast<float>(xk), static_cast<float>(yk), s.i[1]))
                                      : floorDiv(xk, yk));
        }
        return PW_LOOP(o[k] = floorDiv(xk, yk));
    case mtiaTorchPwRemainder: return PW_LOOP(o[k] = remainderOf(xk, yk));
    case mtiaTorchPwFmod: return PW_LOOP(o[k] = fmodOf(xk, yk));
    case mtiaTorchPwPow: return PW_LOOP(o[k] = powOf(xk, yk));
    case mtiaTorchPwMaximum: return PW_LOOP(o[k] = maxProp(xk, yk));
    case mtiaTorchPwMinimum: return PW_LOOP(o[k] = minProp(xk, yk));
    case mtiaTorchPwFmax:
        return PW_LOOP(o[k] = isNan(xk) ? yk : (isNan(yk) ? xk : (xk > yk ? xk : yk)));
    case mtiaTorchPwFmin:
        return PW_LOOP(o[k] = isNan(xk) ? yk : (isNan(yk) ? xk : (xk < yk ? xk : yk)));
    case mtiaTorchPwEq: return PW_LOOP(o[k] = xk == yk ? 1 : 0);
    case mtiaTorchPwNe: return PW_LOOP(o[k] = xk != yk ? 1 : 0);
    case mtiaTorchPwLt: return PW_LOOP(o[k] = xk < yk ? 1 : 0);
    case mtiaTorchPwLe: return PW_LOOP(o[k] = xk <= yk ? 1 : 0);
    case mtiaTorchPwGt: return PW_LOOP(o[k] = xk > yk ? 1 : 0);
    case mtiaTorchPwGe: return PW_LOOP(o[k] = xk >= yk ? 1 : 0);
    case mtiaTorchPwLogicalAnd: return PW_LOOP(o[k] = (xk != C(0)) && (yk != C(0)) ? 1 : 0);
    case mtiaTorchPwLogicalOr: return PW_LOOP(o[k] = (xk != C(0)) || (yk != C(0)) ? 1 : 0);
    case mtiaTorchPwLogicalXor: return PW_LOOP(o[k] = (xk != C(0)) != (yk != C(0)) ? 1 : 0);
    case mtiaTorchPwLerpScalar: return PW_LOOP(o[k] = lerpOf(xk, yk, s0));
    case mtiaTorchPwThresholdBackward: return PW_LOOP(o[k] = yk <= s0 ? C(0) : xk);
    case mtiaTorchPwLeakyReluBackward: return PW_LOOP(o[k] = yk > C(0) ? xk : xk * s0);
    case mtiaTorchPwHardtanhBackward: return PW_LOOP(o[k] = (yk <= s0 || yk >= s1) ? C(0) : xk);
    case mtiaTorchPwWhere: return PW_LOOP(o[k] = xk != C(0) ? yk : zk);
    case mtiaTorchPwAddcmul: return PW_LOOP(o[k] = wadd(xk, wmul(s0, wmul(yk, zk))));
    case mtiaTorchPwLerpTensor: return PW_LOOP(o[k] = lerpOf(xk, yk, zk));
    case mtiaTorchPwClampTensor:
        return PW_LOOP(o[k] = clampOf(xk, s.i[0] != 0, yk, s.i[1] != 0, zk));
    default: break;
    }
    if constexpr (I) {
        switch (op) {
        case mtiaTorchPwBitwiseNot: return PW_LOOP(o[k] = ~xk);
        case mtiaTorchPwBitwiseAnd: return PW_LOOP(o[k] = xk & yk);
        case mtiaTorchPwBitwiseOr: return PW_LOOP(o[k] = xk | yk);
        case mtiaTorchPwBitwiseXor: return PW_LOOP(o[k] = xk ^ yk);
        // Shifts by a negative amount or by the width or more: 0 left, the sign right (the CPU's).
        case mtiaTorchPwLshift:
            return PW_LOOP(
                o[k] = (yk < 0 || yk >= 64) ? 0 : static_cast<C>(static_cast<uint64_t>(xk) << yk));
        case mtiaTorchPwRshift:
            return PW_LOOP(o[k] = (yk < 0 || yk >= 64) ? (xk < 0 ? -1 : 0) : (xk >> yk));
        case mtiaTorchPwIsInf:
        case mtiaTorchPwIsPosInf:
        case mtiaTorchPwIsNegInf: return PW_LOOP(o[k] = 0);
        case mtiaTorchPwSignbit: return PW_LOOP(o[k] = xk < 0 ? 1 : 0);
        case mtiaTorchPwIsFinite: return PW_LOOP(o[k] = 1);
        case mtiaTorchPwFloor:
        case mtiaTorchPwCeil:
        case mtiaTorchPwRound:
        case mtiaTorchPwTrunc: return PW_LOOP(o[k] = xk);
        case mtiaTorchPwDiv: return PW_LOOP(o[k] = truncDiv(xk, yk));
        default: return nullptr;
        }
    } else {
        switch (op) {
        case mtiaTorchPwExp: return PW_LOOP(o[k] = std::exp(xk));
        case mtiaTorchPwExp2: return PW_LOOP(o[k] = std::exp2(xk));
        case mtiaTorchPwExpm1: return PW_LOOP(o[k] = std::expm1(xk));
        case mtiaTorchPwLog: return PW_LOOP(o[k] = std::log(xk));
        case mtiaTorchPwLog2: return PW_LOOP(o[k] = std::log2(xk));
        case mtiaTorchPwLog10: return PW_LOOP(o[k] = std::log10(xk));
        case mtiaTorchPwLog1p: return PW_LOOP(o[k] = std::log1p(xk));
        case mtiaTorchPwSqrt: return PW_LOOP(o[k] = std::sqrt(xk));
        case mtiaTorchPwRsqrt: return PW_LOOP(o[k] = C(1) / std::sqrt(xk));
        case mtiaTorchPwSin: return PW_LOOP(o[k] = std::sin(xk));
        case mtiaTorchPwCos: return PW_LOOP(o[k] = std::cos(xk));
        case mtiaTorchPwTan: return PW_LOOP(o[k] = std::tan(xk));
        case mtiaTorchPwAsin: return PW_LOOP(o[k] = std::asin(xk));
        case mtiaTorchPwAcos: return PW_LOOP(o[k] = std::acos(xk));
        case mtiaTorchPwAtan: return PW_LOOP(o[k] = std::atan(xk));
        case mtiaTorchPwSinh: return PW_LOOP(o[k] = std::sinh(xk));
        case mtiaTorchPwCosh: return PW_LOOP(o[k] = std::cosh(xk));
        case mtiaTorchPwTanh: return PW_LOOP(o[k] = std::tanh(xk));
        case mtiaTorchPwAsinh: return PW_LOOP(o[k] = std::asinh(xk));
        case mtiaTorchPwAcosh: return PW_LOOP(o[k] = std::acosh(xk));
        case mtiaTorchPwAtanh: return PW_LOOP(o[k] = std::atanh(xk));
        case mtiaTorchPwErf: return PW_LOOP(o[k] = std::erf(xk));
        case mtiaTorchPwErfc: return PW_LOOP(o[k] = std::erfc(xk));
        case mtiaTorchPwSigmoid: return PW_LOOP(o[k] = sigmoidOf(xk));
        case mtiaTorchPwFloor: return PW_LOOP(o[k] = std::floor(xk));
        case mtiaTorchPwCeil: return PW_LOOP(o[k] = std::ceil(xk));
        case mtiaTorchPwRound: return PW_LOOP(o[k] = roundEven(xk));
        case mtiaTorchPwRoundDecimals:
            return PW_LOOP(o[k] = s.i[0] != 0 ? roundEven(xk * s0) / s0 : roundEven(xk / s0) * s0);
        case mtiaTorchPwTrunc: return PW_LOOP(o[k] = std::trunc(xk));
        case mtiaTorchPwFrac: return PW_LOOP(o[k] = xk - std::trunc(xk));
        case mtiaTorchPwReciprocal: return PW_LOOP(o[k] = C(1) / xk);
        case mtiaTorchPwIsInf: return PW_LOOP(o[k] = std::isinf(xk) ? 1 : 0);
        case mtiaTorchPwIsFinite: return PW_LOOP(o[k] = std::isfinite(xk) ? 1 : 0);
        case mtiaTorchPwIsPosInf: return PW_LOOP(o[k] = (std::isinf(xk) && xk > 0) ? 1 : 0);
        case mtiaTorchPwIsNegInf: return PW_LOOP(o[k] = (std::isinf(xk) && xk < 0) ? 1 : 0);
        case mtiaTorchPwSignbit: return PW_LOOP(o[k] = std::signbit(xk) ? 1 : 0);
        case mtiaTorchPwNanToNum:
            return PW_LOOP(o[k] = std::isnan(xk) ? s0 : (std::isinf(xk) ? (xk > 0 ? s1 : s2) : xk));
        case mtiaTorchPwSilu: return PW_LOOP(o[k] = xk / (C(1) + std::exp(-xk)));
        case mtiaTorchPwGelu: return PW_LOOP(o[k] = geluOf(xk));
        case mtiaTorchPwGeluTanh: return PW_LOOP(o[k] = geluTanhOf(xk));
        case mtiaTorchPwSoftplus:
            return PW_LOOP(o[k] = xk * s0 > s1 ? xk : std::log1p(std::exp(xk * s0)) / s0);
        case mtiaTorchPwElu:
            return PW_LOOP(o[k] = xk > C(0) ? xk * s1 : std::expm1(xk * s2) * s0 * s1);
        case mtiaTorchPwHardsigmoid:
            return PW_LOOP(o[k] = std::min(std::max(xk + C(3), C(0)), C(6)) / C(6));
        case mtiaTorchPwHardswish:
            return PW_LOOP(o[k] = xk * std::min(std::max(xk + C(3), C(0)), C(6)) / C(6));
        case mtiaTorchPwDiv: return PW_LOOP(o[k] = xk / yk);
        case mtiaTorchPwAtan2: return PW_LOOP(o[k] = std::atan2(xk, yk));
        case mtiaTorchPwHypot: return PW_LOOP(o[k] = std::hypot(xk, yk));
        case mtiaTorchPwCopysign: return PW_LOOP(o[k] = std::copysign(xk, yk));
        case mtiaTorchPwXlogy:
            return PW_LOOP(o[k] = std::isnan(yk) ? yk : (xk == C(0) ? C(0) : xk * std::log(yk)));
        case mtiaTorchPwGeluBackward: return PW_LOOP(o[k] = geluBackwardOf(xk, yk, s.i[0] != 0));
        case mtiaTorchPwSiluBackward:
            return PW_LOOP(const C sg = sigmoidOf(yk); o[k] = xk * sg * (C(1) + yk * (C(1) - sg)));
        case mtiaTorchPwSigmoidBackward: return PW_LOOP(o[k] = xk * (C(1) - yk) * yk);
        case mtiaTorchPwTanhBackward: return PW_LOOP(o[k] = xk * (C(1) - yk * yk));
        case mtiaTorchPwSoftplusBackward:
            return PW_LOOP(const C z2 = std::exp(yk * s0);
                           o[k] = yk * s0 > s1 ? xk : xk * z2 / (z2 + C(1)));
        case mtiaTorchPwEluBackward:
            return PW_LOOP(
                const C a = s0; const C sc = s1; const C is = s2; if (s.i[0] != 0) {
                    o[k] = yk <= C(0) ? xk * is * (yk + a * sc) : xk * sc;
                } else { o[k] = yk <= C(0) ? xk * is * a * sc * std::exp(yk * is) : xk * sc; });
        case mtiaTorchPwHardsigmoidBackward:
            return PW_LOOP(o[k] = (yk > C(-3) && yk < C(3)) ? xk / C(6) : C(0));
        case mtiaTorchPwHardswishBackward:
            return PW_LOOP(o[k] =
                               yk < C(-3) ? C(0) : (yk <= C(3) ? xk * ((yk / C(3)) + C(0.5)) : xk));
        case mtiaTorchPwAddcdiv: return PW_LOOP(o[k] = xk + s0 * yk / zk);
        default: return nullptr;
        }
    }
}

#undef PW_LOOP

// The dtype whose values are C itself (read and written in place when contiguous).
template <class C>
constexpr int32_t nativeDtype() {
    if constexpr (std::is_same_v<C, float>) return mtiaTorchFloat32;
    if constexpr (std::is_same_v<C, double>) return mtiaTorchFloat64;
    return mtiaTorchInt64;
}

// n elements of dtype at src (stride in bytes) into dst as C.
template <class C>
void loadRow(C* dst, const char* src, int64_t stride, int32_t dtype, int64_t n) {
#define PW_LOAD(expr)                                                                              \
    for (int64_t k = 0; k < n; ++k) {                                                              \
        const char* p = src + k * stride;                                                          \
        dst[k] = static_cast<C>(expr);                                                             \
    }                                                                                              \
    return
    switch (dtype) {
    case mtiaTorchBool: PW_LOAD(loadAs<uint8_t>(p) != 0 ? 1 : 0);
    case mtiaTorchUInt8: PW_LOAD(loadAs<uint8_t>(p));
    case mtiaTorchInt8: PW_LOAD(loadAs<int8_t>(p));
    case mtiaTorchInt16: PW_LOAD(loadAs<int16_t>(p));
    case mtiaTorchInt32: PW_LOAD(loadAs<int32_t>(p));
    case mtiaTorchInt64: PW_LOAD(loadAs<int64_t>(p));
    case mtiaTorchFloat16: PW_LOAD(halfToFloat(loadAs<uint16_t>(p)));
    case mtiaTorchBFloat16: PW_LOAD(bf16ToFloat(loadAs<uint16_t>(p)));
    case mtiaTorchFloat32:
        if constexpr (kIntegral<C>) {
            PW_LOAD(floatToInt64(loadAs<float>(p)));
        } else {
            PW_LOAD(loadAs<float>(p));
        }
    default:
        if constexpr (kIntegral<C>) {
            PW_LOAD(floatToInt64(loadAs<double>(p)));
        } else {
            PW_LOAD(loadAs<double>(p));
        }
    }
#undef PW_LOAD
}

// n values of C into dtype at dst (stride in bytes), converted as the CPU converts.
template <class C>
void storeRow(char* dst, int64_t stride, int32_t dtype, const C* src, int64_t n) {
#define PW_STORE(T, expr)                                                                          \
    for (int64_t k = 0; k < n; ++k) {                                                              \
        const C v = src[k];                                                                        \
        storeAs<T>(dst + k * stride, static_cast<T>(expr));                                        \
    }                                                                                              \
    return
    switch (dtype) {
    case mtiaTorchBool: PW_STORE(uint8_t, v != C(0) ? 1 : 0);
    case mtiaTorchFloat16: PW_STORE(uint16_t, floatToHalf(static_cast<float>(v)));
    case mtiaTorchBFloat16: PW_STORE(uint16_t, floatToBf16(static_cast<float>(v)));
    case mtiaTorchFloat32: PW_STORE(float, v);
    case mtiaTorchFloat64: PW_STORE(double, v);
    default: break;
    }
    if constexpr (kIntegral<C>) {
        switch (dtype) {
        case mtiaTorchUInt8: PW_STORE(uint8_t, v);
        case mtiaTorchInt8: PW_STORE(int8_t, v);
        case mtiaTorchInt16: PW_STORE(int16_t, v);
        case mtiaTorchInt32: PW_STORE(int32_t, v);
        default: PW_STORE(int64_t, v);
        }
    } else {
        switch (dtype) {
        case mtiaTorchUInt8: PW_STORE(uint8_t, floatToInt32(v));
        case mtiaTorchInt8: PW_STORE(int8_t, floatToInt32(v));
        case mtiaTorchInt16: PW_STORE(int16_t, floatToInt32(v));
        case mtiaTorchInt32: PW_STORE(int32_t, floatToInt32(v));
        default: PW_STORE(int64_t, floatToInt64(v));
        }
    }
#undef PW_STORE
}

struct Operand {
    char* base;  // element 0
    int32_t dtype;
    int size;                              // bytes per element
    int64_t strides[MTIA_TORCH_MAX_DIMS];  // bytes
};

template <class C>
void run(const mtiaTorchPointwise& p, ApplyFn<C> apply, uint64_t begin, uint64_t end) {
    const int nin = p.ninputs;
    const int ndim = p.ndim > 0 ? p.ndim : 1;
    int64_t sizes[MTIA_TORCH_MAX_DIMS];
    for (int d = 0; d < ndim; ++d) sizes[d] = p.ndim > 0 ? p.sizes[d] : 1;
    Operand ops[1 + MTIA_TORCH_POINTWISE_MAX_INPUTS];
    // Immediates: a stride-0 operand over the value kept here, in the computation's own kind.
    double fcells[MTIA_TORCH_POINTWISE_MAX_INPUTS];
    int64_t icells[MTIA_TORCH_POINTWISE_MAX_INPUTS];
    for (int k = 0; k <= nin; ++k) {
        const mtiaTorchOperand& src = k == 0 ? p.out : p.in[k - 1];
        Operand& op = ops[k];
        op.dtype = src.dtype;
        op.size = elementSize(src.dtype);
        op.base = reinterpret_cast<char*>(src.data);
        for (int d = 0; d < ndim; ++d) op.strides[d] = p.ndim > 0 ? src.strides[d] * op.size : 0;
        if (k > 0 && src.immediate != 0) {
            if (kIntegral<C> || !isFloating(src.dtype)) {
                icells[k - 1] = src.ivalue;
                op.base = reinterpret_cast<char*>(&icells[k - 1]);
                op.dtype = mtiaTorchInt64;
            } else {
                fcells[k - 1] = src.fvalue;
                op.base = reinterpret_cast<char*>(&fcells[k - 1]);
                op.dtype = mtiaTorchFloat64;
            }
            op.size = 8;
            for (int d = 0; d < ndim; ++d) op.strides[d] = 0;
        }
    }
    Scalars scalars;
    std::memcpy(scalars.f, p.f, sizeof scalars.f);
    std::memcpy(scalars.i, p.i, sizeof scalars.i);

    // The multi-index of `begin` and each operand's offset there.
    int64_t index[MTIA_TORCH_MAX_DIMS];
    uint64_t rest = begin;
    for (int d = 0; d < ndim; ++d) {
        index[d] = static_cast<int64_t>(rest % static_cast<uint64_t>(sizes[d]));
        rest /= static_cast<uint64_t>(sizes[d]);
    }
    int64_t offsets[1 + MTIA_TORCH_POINTWISE_MAX_INPUTS];  // of the row's start (index[0] = 0)
    for (int k = 0; k <= nin; ++k) {
        offsets[k] = 0;
        for (int d = 1; d < ndim; ++d) offsets[k] += index[d] * ops[k].strides[d];
    }
    alignas(64) C buffers[1 + MTIA_TORCH_POINTWISE_MAX_INPUTS][kChunk];
    static const C zeros[kChunk] = {};
    const C* in[MTIA_TORCH_POINTWISE_MAX_INPUTS] = {zeros, zeros, zeros};
    constexpr int32_t native = nativeDtype<C>();
    // Half/bfloat16 add: the CPU vectorises rows whose operands are contiguous (or broadcast) in
    // chunks of i2 elements from the row's start, and computes the rest one by one.
    bool vectorRow = ops[0].strides[0] == ops[0].size;
    for (int k = 1; k <= nin; ++k) {
        vectorRow = vectorRow && (ops[k].strides[0] == 0 || ops[k].strides[0] == ops[k].size);
    }
    const int64_t vectorEnd = vectorRow && p.i[2] > 0 ? sizes[0] / p.i[2] * p.i[2] : 0;
    uint64_t done = begin;
    while (done < end) {
        const int64_t rowLeft = sizes[0] - index[0];
        const int64_t row = static_cast<int64_t>(std::min<uint64_t>(rowLeft, end - done));
        for (int64_t c0 = 0; c0 < row; c0 += kChunk) {
            const int64_t n = std::min<int64_t>(kChunk, row - c0);
            const int64_t at = index[0] + c0;
            for (int k = 1; k <= nin; ++k) {
                const Operand& op = ops[k];
                const char* src = op.base + offsets[k] + at * op.strides[0];
                if (op.dtype == native && op.strides[0] == static_cast<int64_t>(sizeof(C))) {
                    in[k - 1] = reinterpret_cast<const C*>(src);  // in place: same type, contiguous
                } else {
                    loadRow<C>(buffers[k], src, op.strides[0], op.dtype, n);
                    in[k - 1] = buffers[k];
                }
            }
            if (p.op == mtiaTorchPwAdd && p.i[1] != 0) {  // where the CPU's vector loop is
                scalars.i[3] = std::clamp<int64_t>(vectorEnd - at, 0, n);
            }
            char* dst = ops[0].base + offsets[0] + at * ops[0].strides[0];
            if (ops[0].dtype == native && ops[0].strides[0] == static_cast<int64_t>(sizeof(C)) &&
                reinterpret_cast<uintptr_t>(dst) % alignof(C) == 0) {
                apply(reinterpret_cast<C*>(dst), in[0], in[1], in[2], n, scalars);
            } else {
                apply(buffers[0], in[0], in[1], in[2], n, scalars);
                storeRow<C>(dst, ops[0].strides[0], ops[0].dtype, buffers[0], n);
            }
        }
        done += static_cast<uint64_t>(row);
        index[0] += row;
        if (index[0] < sizes[0]) continue;
        index[0] = 0;
        for (int d = 1; d < ndim; ++d) {  // carry into the outer dimensions
            ++index[d];
            for (int k = 0; k <= nin; ++k) offsets[k] += ops[k].strides[d];
            if (index[d] < sizes[d]) break;
            for (int k = 0; k <= nin; ++k) offsets[k] -= index[d] * ops[k].strides[d];
            index[d] = 0;
        }
    }
}

bool checkOperands(const mtiaKernelContext* ctx, const mtiaTorchPointwise& p) {
    static const char* const names[] = {"out", "input 0", "input 1", "input 2"};
    for (int k = 0; k <= p.ninputs; ++k) {
        const mtiaTorchOperand& op = k == 0 ? p.out : p.in[k - 1];
        if (k > 0 && op.immediate != 0) continue;
        if (!checkRange(ctx, "mtia_torch_pointwise", names[k], op.data, op.dtype, p.ndim, p.sizes,
                        op.strides)) {
            return false;
        }
    }
    return true;
}

// One problem of a launch: checks its params and operands, then runs its share of the index space.
// False when it faulted.
bool runProblem(const mtiaKernelContext* ctx, const char* kernel, const mtiaTorchPointwise& p,
                const Range& range) {
    char what[96];
    if (p.op < 0 || p.op >= mtiaTorchPwOpCount || p.ndim < 0 || p.ndim > MTIA_TORCH_MAX_DIMS ||
        p.ninputs < 0 || p.ninputs > MTIA_TORCH_POINTWISE_MAX_INPUTS) {
        std::snprintf(what, sizeof what, "bad params (op %d, ndim %d, inputs %d)", p.op, p.ndim,
                      p.ninputs);
        return fault(ctx, kernel, what);
    }
    if (range.begin >= range.end) return true;
    if (!checkOperands(ctx, p)) return false;
    bool known = false;
    switch (p.compute) {
    case mtiaTorchComputeFloat:
        if (ApplyFn<float> f = applyFor<float>(p.op)) {
            run<float>(p, f, range.begin, range.end);
            known = true;
        }
        break;
    case mtiaTorchComputeDouble:
        if (ApplyFn<double> f = applyFor<double>(p.op)) {
            run<double>(p, f, range.begin, range.end);
            known = true;
        }
        break;
    case mtiaTorchComputeInt64:
        if (ApplyFn<int64_t> f = applyFor<int64_t>(p.op)) {
            run<int64_t>(p, f, range.begin, range.end);
            known = true;
        }
        break;
    default: break;
    }
    if (!known) {
        std::snprintf(what, sizeof what, "op %d has no %s form", p.op,
                      p.compute == mtiaTorchComputeInt64 ? "integer" : "floating");
        return fault(ctx, kernel, what);
    }
    return true;
}

void unflatten(const mtiaTorchFlatOperand& flat, mtiaTorchOperand& op) {
    op.data = flat.data;
    op.dtype = flat.dtype;
    op.immediate = flat.immediate;
    op.fvalue = flat.fvalue;
    op.ivalue = flat.ivalue;
    op.strides[0] = flat.stride;
}

}  // namespace

MTIA_SIM_KERNEL_ARGS(mtia_torch_pointwise, 1, sizeof(mtiaTorchPointwise));

MTIA_SIM_KERNEL(mtia_torch_pointwise) {
    mtiaTorchPointwise p;
    std::memcpy(&p, args[0], sizeof p);
    runProblem(ctx, "mtia_torch_pointwise", p, blockRange(ctx, p.numel));
}

MTIA_SIM_KERNEL_ARGS(mtia_torch_pointwise_batch, 1, sizeof(mtiaTorchPointwiseBatch));

// The problems in order, each split over the launch's blocks as a launch of its own would be. The
// host never puts a problem behind one whose output it overlaps (or reads what that one writes), so
// no problem depends on another's elements.
MTIA_SIM_KERNEL(mtia_torch_pointwise_batch) {
    const auto* batch = static_cast<const mtiaTorchPointwiseBatch*>(args[0]);
    const int32_t count = batch->count;
    if (count < 1 || count > MTIA_TORCH_POINTWISE_BATCH_MAX) {
        char what[64];
        std::snprintf(what, sizeof what, "bad params (count %d)", count);
        fault(ctx, "mtia_torch_pointwise_batch", what);
        return;
    }
    for (int32_t k = 0; k < count; ++k) {
        const mtiaTorchFlatPointwise& flat = batch->items[k];
        mtiaTorchPointwise p{};
        p.op = flat.op;
        p.compute = flat.compute;
        p.ninputs = flat.ninputs;
        p.numel = flat.numel;
        p.ndim = flat.ndim;
        if (p.ndim < 0 || p.ndim > 1 || p.ninputs < 0 ||
            p.ninputs > MTIA_TORCH_POINTWISE_MAX_INPUTS) {
            char what[96];
            std::snprintf(what, sizeof what, "bad params (item %d: ndim %d, inputs %d)", k, p.ndim,
                          p.ninputs);
            fault(ctx, "mtia_torch_pointwise_batch", what);
            return;
        }
        p.sizes[0] = static_cast<int64_t>(flat.numel);
        std::memcpy(p.f, flat.f, sizeof p.f);
        std::memcpy(p.i, flat.i, sizeof p.i);
        unflatten(flat.out, p.out);
        for (int32_t a = 0; a < p.ninputs; ++a) unflatten(flat.in[a], p.in[a]);
        if (!runProblem(ctx, "mtia_torch_pointwise_batch", p, blockRange(ctx, p.numel))) return;
    }
}
