// Device-side element access shared by every kernel file of the module: the element types of
// kernel_params.h read and written as double, float or int64, with PyTorch's CPU conversions
// (half and bfloat16 round to nearest even; float to integer as x86's truncating conversions
// give on the CPU, NaN and out-of-range values included), and the launch geometry helpers.
#pragma once

#include "kernel_params.h"

#include <mtia/mtia_sim_kernel.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace mtia_kernels {

inline float halfToFloat(uint16_t h) {
    const uint32_t sign = uint32_t{h & 0x8000u} << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t mant = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (mant << 13);
    } else if (exp != 0) {
        bits = sign | ((exp + 112) << 23) | (mant << 13);
    } else if (mant == 0) {
        bits = sign;
    } else {  // subnormal: normalise
        exp = 113;
        while ((mant & 0x400u) == 0) {
            mant <<= 1;
            --exp;
        }
        bits = sign | (exp << 23) | ((mant & 0x3ffu) << 13);
    }
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

inline uint16_t floatToHalf(float f) {
    uint32_t x;
    std::memcpy(&x, &f, sizeof x);
    const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
    const uint32_t absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u) return sign | (absx > 0x7f800000u ? 0x7e00u : 0x7c00u);  // NaN, inf
    if (absx >= 0x477ff000u) return sign | 0x7c00u;       // overflows to inf
    if (absx < 0x38800000u) {                             // subnormal or zero
        const float scaled = std::fabs(f) * 16777216.0f;  // 2^24: one unit = the smallest subnormal
        return sign | static_cast<uint16_t>(std::nearbyint(scaled));
    }
    const uint32_t mant = absx & 0x7fffffu;
    uint32_t h = ((absx >> 23) - 112) << 10 | (mant >> 13);
    const uint32_t rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // may carry into the exponent
    return sign | static_cast<uint16_t>(h);
}

inline float bf16ToFloat(uint16_t b) {
    const uint32_t bits = uint32_t{b} << 16;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

inline uint16_t floatToBf16(float f) {
    uint32_t x;
    std::memcpy(&x, &f, sizeof x);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // NaN
    x += 0x7fffu + ((x >> 16) & 1u);
    return static_cast<uint16_t>(x >> 16);
}

inline int elementSize(int32_t dtype) {
    switch (dtype) {
    case mtiaTorchBool:
    case mtiaTorchUInt8:
    case mtiaTorchInt8: return 1;
    case mtiaTorchInt16:
    case mtiaTorchFloat16:
    case mtiaTorchBFloat16: return 2;
    case mtiaTorchInt32:
    case mtiaTorchFloat32: return 4;
    case mtiaTorchInt64:
    case mtiaTorchFloat64: return 8;
    default: return 0;
    }
}

inline bool isFloating(int32_t dtype) {
    return dtype >= mtiaTorchFloat16 && dtype <= mtiaTorchFloat64;
}

template <class T>
T loadAs(const void* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

template <class T>
void storeAs(void* p, T v) {
    std::memcpy(p, &v, sizeof v);
}

// Float to integer as the CPU converts on x86 (cvttss2si/cvttsd2si): truncation toward zero, and
// NaN or a value out of range gives the "integer indefinite" (INT32_MIN, INT64_MIN). int8, int16
// and uint8 go through int32 and keep its low bits, as the CPU's conversion does.
inline int32_t floatToInt32(double d) {
    if (!(d > -2147483649.0 && d < 2147483648.0)) return INT32_MIN;
    return static_cast<int32_t>(d);
}
inline int64_t floatToInt64(double d) {
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) return INT64_MIN;
    return static_cast<int64_t>(d);
}

inline double loadDouble(const void* p, int32_t dtype) {
    switch (dtype) {
    case mtiaTorchBool: return loadAs<uint8_t>(p) != 0 ? 1.0 : 0.0;
    case mtiaTorchUInt8: return loadAs<uint8_t>(p);
    case mtiaTorchInt8: return loadAs<int8_t>(p);
    case mtiaTorchInt16: return loadAs<int16_t>(p);
    case mtiaTorchInt32: return loadAs<int32_t>(p);
    case mtiaTorchInt64: return static_cast<double>(loadAs<int64_t>(p));
    case mtiaTorchFloat16: return halfToFloat(loadAs<uint16_t>(p));
    case mtiaTorchBFloat16: return bf16ToFloat(loadAs<uint16_t>(p));
    case mtiaTorchFloat32: return loadAs<float>(p);
    default: return loadAs<double>(p);
    }
}

// As loadDouble, but an int64 above 2^24 rounds to float once (as the CPU's int64 -> float).
inline float loadFloat(const void* p, int32_t dtype) {
    switch (dtype) {
    case mtiaTorchInt64: return static_cast<float>(loadAs<int64_t>(p));
    case mtiaTorchInt32: return static_cast<float>(loadAs<int32_t>(p));
    case mtiaTorchFloat64: return static_cast<float>(loadAs<double>(p));
    default: return static_cast<float>(loadDouble(p, dtype));
    }
}

inline int64_t loadInt(const void* p, int32_t dtype) {
    switch (dtype) {
    case mtiaTorchBool: return loadAs<uint8_t>(p) != 0 ? 1 : 0;
    case mtiaTorchUInt8: return loadAs<uint8_t>(p);
    case mtiaTorchInt8: return loadAs<int8_t>(p);
    case mtiaTorchInt16: return loadAs<int16_t>(p);
    case mtiaTorchInt32: return loadAs<int32_t>(p);
    case mtiaTorchInt64: return loadAs<int64_t>(p);
    default: return floatToInt64(loadDouble(p, dtype));
    }
}

// A floating value stored into any dtype, converted as the CPU converts.
inline void storeDouble(void* p, int32_t dtype, double v) {
    switch (dtype) {
    case mtiaTorchFloat16: storeAs<uint16_t>(p, floatToHalf(static_cast<float>(v))); break;
    case mtiaTorchBFloat16: storeAs<uint16_t>(p, floatToBf16(static_cast<float>(v))); break;
    case mtiaTorchFloat32: storeAs<float>(p, static_cast<float>(v)); break;
    case mtiaTorchFloat64: storeAs<double>(p, v); break;
    case mtiaTorchBool: storeAs<uint8_t>(p, v != 0.0 ? 1 : 0); break;
    case mtiaTorchUInt8: storeAs<uint8_t>(p, static_cast<uint8_t>(floatToInt32(v))); break;
    case mtiaTorchInt8: storeAs<int8_t>(p, static_cast<int8_t>(floatToInt32(v))); break;
    case mtiaTorchInt16: storeAs<int16_t>(p, static_cast<int16_t>(floatToInt32(v))); break;
    case mtiaTorchInt32: storeAs<int32_t>(p, floatToInt32(v)); break;
    case mtiaTorchInt64: storeAs<int64_t>(p, floatToInt64(v)); break;
    default: break;
    }
}

// An integer value stored into any dtype (wrapping to the narrower integer types, as C++ and the
// CPU do).
inline void storeInt(void* p, int32_t dtype, int64_t v) {
    switch (dtype) {
    case mtiaTorchBool: storeAs<uint8_t>(p, v != 0 ? 1 : 0); break;
    case mtiaTorchUInt8: storeAs<uint8_t>(p, static_cast<uint8_t>(v)); break;
    case mtiaTorchInt8: storeAs<int8_t>(p, static_cast<int8_t>(v)); break;
    case mtiaTorchInt16: storeAs<int16_t>(p, static_cast<int16_t>(v)); break;
    case mtiaTorchInt32: storeAs<int32_t>(p, static_cast<int32_t>(v)); break;
    case mtiaTorchInt64: storeAs<int64_t>(p, v); break;
    case mtiaTorchFloat32: storeAs<float>(p, static_cast<float>(v)); break;
    default: storeDouble(p, dtype, static_cast<double>(v)); break;
    }
}

// The blocks of a launch and this block's index among them.
inline uint64_t blockCount(const mtiaKernelContext* ctx) {
    return uint64_t{ctx->gridDim.x} * ctx->gridDim.y * ctx->gridDim.z;
}

inline uint64_t blockIndex(const mtiaKernelContext* ctx) {
    return ctx->blockIdx.x + uint64_t{ctx->gridDim.x} *
                                 (ctx->blockIdx.y + uint64_t{ctx->gridDim.y} * ctx->blockIdx.z);
}

// This block's share [begin, end) of n work items split evenly over the grid.
struct Range {
    uint64_t begin, end;
};
inline Range blockRange(const mtiaKernelContext* ctx, uint64_t n) {
    const uint64_t blocks = blockCount(ctx);
    const uint64_t block = blockIndex(ctx);
    const uint64_t chunk = n / blocks + (n % blocks != 0 ? 1 : 0);
    const uint64_t begin = std::min(n, block * chunk);
    return {begin, std::min(n, begin + chunk)};
}

// Faults the launch with "kernel: what" and returns false.
inline bool fault(const mtiaKernelContext* ctx, const char* kernel, const char* what) {
    char message[256];
    std::snprintf(message, sizeof message, "%s: %s", kernel, what);
    ctx->fault(ctx, message);
    return false;
}

// Whether every element that a tensor of dtype at data with sizes/strides (elements) touches is
// device memory of this device; faults naming the operand when not.
inline bool checkRange(const mtiaKernelContext* ctx, const char* kernel, const char* operand,
                       uint64_t data, int32_t dtype, int ndim, const int64_t* sizes,
                       const int64_t* strides) {
    char what[160];
    const int size = elementSize(dtype);
    if (size == 0) {
        std::snprintf(what, sizeof what, "operand %s has an unknown dtype %d", operand, dtype);
        return fault(ctx, kernel, what);
    }
    int64_t lo = 0, hi = 0;
    for (int d = 0; d < ndim; ++d) {
        if (sizes[d] <= 0) return true;  // nothing to touch
        const int64_t span = (sizes[d] - 1) * strides[d];
        (span < 0 ? lo : hi) += span;
    }
    if (data == 0) {
        std::snprintf(what, sizeof what, "operand %s is NULL", operand);
        return fault(ctx, kernel, what);
    }
    const auto first = static_cast<uint64_t>(static_cast<int64_t>(data) + lo * size);
    const auto bytes = static_cast<uint64_t>((hi - lo + 1) * size);
    if (!ctx->isDeviceRange(ctx, reinterpret_cast<const void*>(first), bytes)) {
        std::snprintf(what, sizeof what,
                      "operand %s addresses memory that is not device memory of this device",
                      operand);
        return fault(ctx, kernel, what);
    }
    return true;
}

}  // namespace mtia_kernels
