// exp(x) in float over four lanes (libm's expf is a call GCC cannot vectorise; the CPU's vectorised
// float kernels use a SIMD exp of about 1 ulp too), and the same for one float (a loop's tail).
// Written on GCC/Clang vector types: with -ftrapping-math (the default) GCC does not vectorise a
// loop whose float comparisons it would have to turn into selects. Within 2 ulp of the exact value
// over the whole range: exp(x) = 2^n * e^r with n = round(x / ln 2) and r = x - n ln 2 in [-ln 2 /
// 2, ln 2 / 2] (ln 2 in two parts, so that n * kLn2Hi is exact), e^r by its Taylor polynomial of
// degree 7 (the next term is under 2^-27 there), 2^n as two powers of two so that results below
// FLT_MIN come out subnormal and those above FLT_MAX infinite. NaN propagates; -inf gives 0.
#ifndef MTIA_TORCH_FAST_EXP_H
#define MTIA_TORCH_FAST_EXP_H

#include <bit>
#include <cstdint>

namespace mtia_kernels {

using Float4 = float __attribute__((vector_size(16)));
using Int4 = int32_t __attribute__((vector_size(16)));
using UInt4 = uint32_t __attribute__((vector_size(16)));

inline Float4 loadFloat4(const float* p) {
    Float4 v;
    __builtin_memcpy(&v, p, sizeof v);
    return v;
}
inline void storeFloat4(float* p, Float4 v) {
    __builtin_memcpy(p, &v, sizeof v);
}

// F is float or Float4, I and U the int32_t and uint32_t of as many lanes.
template <class F, class I, class U>
inline F fastExpT(F x) {
    constexpr float kLog2e = 1.44269504088896341f;
    constexpr float kLn2Hi = 0.693359375f;  // 355/512: n * kLn2Hi is exact for |n| < 2^15
    constexpr float kLn2Lo = -2.12194440e-4f;
    constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
    // Beyond these bounds the result is 0 or infinite anyway; the bounds keep n small (NaN passes:
    // both comparisons are false).
    x = x < -120.0f ? -120.0f : x;
    x = x > 90.0f ? 90.0f : x;
    const F t = x * kLog2e + kRound;
    const F n = t - kRound;
    const I ni = std::bit_cast<I>(std::bit_cast<U>(t) - std::bit_cast<uint32_t>(kRound));
    const F r = (x - n * kLn2Hi) - n * kLn2Lo;
    F p = r * (1.0f / 5040);
    p = p + 1.0f / 720;
    p = p * r + 1.0f / 120;
    p = p * r + 1.0f / 24;
    p = p * r + 1.0f / 6;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    // n in [-174, 130]: each half within the normal exponents.
    const I n1 = ni >> 1, n2 = ni - n1;
    const F s1 = std::bit_cast<F>((std::bit_cast<U>(n1) + 127u) << 23);
    const F s2 = std::bit_cast<F>((std::bit_cast<U>(n2) + 127u) << 23);
    return p * s1 * s2;
}

inline float fastExp(float x) {
    return fastExpT<float, int32_t, uint32_t>(x);
}
inline Float4 fastExp(Float4 x) {
    return fastExpT<Float4, Int4, UInt4>(x);
}

}  // namespace mtia_kernels

#endif  // MTIA_TORCH_FAST_EXP_H
