// The kernel module of the PyTorch integration: one strided elementwise kernel for every dtype the
// integration supports (copies with type conversion, fill, linear combinations, products, relu and
// sums over dimensions). It is loaded with mtiaModuleLoad and runs on the simulated device, where
// device memory is host-addressable; it never calls the runtime.
#include "kernel_params.h"

#include <mtia/mtia_sim_kernel.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace {

// IEEE half and bfloat16 from and to float, rounding to nearest even.
float halfToFloat(uint16_t h) {
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

uint16_t floatToHalf(float f) {
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
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
        ++h;  // may carry into the exponent: still right
    return sign | static_cast<uint16_t>(h);
}

float bf16ToFloat(uint16_t b) {
    const uint32_t bits = uint32_t{b} << 16;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

uint16_t floatToBf16(float f) {
    uint32_t x;
    std::memcpy(&x, &f, sizeof x);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
    x += 0x7fffu + ((x >> 16) & 1u);
    return static_cast<uint16_t>(x >> 16);
}

int elementSize(int32_t dtype) {
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

bool isFloating(int32_t dtype) {
    return dtype >= mtiaTorchFloat16;
}

template <class T>
T loadAs(const char* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

template <class T>
void storeAs(char* p, T v) {
    std::memcpy(p, &v, sizeof v);
}

double loadDouble(const char* p, int32_t dtype) {
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

int64_t loadInt(const char* p, int32_t dtype) {
    switch (dtype) {
    case mtiaTorchBool: return loadAs<uint8_t>(p) != 0 ? 1 : 0;
    case mtiaTorchUInt8: return loadAs<uint8_t>(p);
    case mtiaTorchInt8: return loadAs<int8_t>(p);
    case mtiaTorchInt16: return loadAs<int16_t>(p);
    case mtiaTorchInt32: return loadAs<int32_t>(p);
    case mtiaTorchInt64: return loadAs<int64_t>(p);
    default: {  // float to int truncates, as C++ and PyTorch; NaN and out-of-range values saturate
        const double d = loadDouble(p, dtype);
        if (d >= -9.2e18 && d <= 9.2e18) return static_cast<int64_t>(d);
        return d > 0 ? INT64_MAX : (d < 0 ? INT64_MIN : 0);
    }
    }
}

void storeDouble(char* p, int32_t dtype, double v) {
    switch (dtype) {
    case mtiaTorchFloat16: storeAs<uint16_t>(p, floatToHalf(static_cast<float>(v))); break;
    case mtiaTorchBFloat16: storeAs<uint16_t>(p, floatToBf16(static_cast<float>(v))); break;
    case mtiaTorchFloat32: storeAs<float>(p, static_cast<float>(v)); break;
    case mtiaTorchFloat64: storeAs<double>(p, v); break;
    case mtiaTorchBool: storeAs<uint8_t>(p, v != 0.0 ? 1 : 0); break;
    default: break;  // integer outputs are stored by storeInt
    }
}

void storeInt(char* p, int32_t dtype, int64_t v) {
    switch (dtype) {
    case mtiaTorchBool: storeAs<uint8_t>(p, v != 0 ? 1 : 0); break;
    case mtiaTorchUInt8: storeAs<uint8_t>(p, static_cast<uint8_t>(v)); break;
    case mtiaTorchInt8: storeAs<int8_t>(p, static_cast<int8_t>(v)); break;
    case mtiaTorchInt16: storeAs<int16_t>(p, static_cast<int16_t>(v)); break;
    case mtiaTorchInt32: storeAs<int32_t>(p, static_cast<int32_t>(v)); break;
    case mtiaTorchInt64: storeAs<int64_t>(p, v); break;
    default: storeDouble(p, dtype, static_cast<double>(v)); break;
    }
}

uint64_t blockCount(const mtiaKernelContext* ctx) {
    return uint64_t{ctx->gridDim.x} * ctx->gridDim.y * ctx->gridDim.z;
}

uint64_t blockIndex(const mtiaKernelContext* ctx) {
    return ctx->blockIdx.x + uint64_t{ctx->gridDim.x} *
                                 (ctx->blockIdx.y + uint64_t{ctx->gridDim.y} * ctx->blockIdx.z);
}

bool fault(const mtiaKernelContext* ctx, const char* what, const char* name) {
    char message[200];
    std::snprintf(message, sizeof message, "mtia_torch_elementwise: %s %s", name, what);
    ctx->fault(ctx, message);
    return false;
}

// Faults unless every element tensor t addresses over the index space is device memory.
bool checkTensor(const mtiaKernelContext* ctx, const mtiaTorchElementwise& p,
                 const mtiaTorchTensorArg& t, const char* name) {
    const int size = elementSize(t.dtype);
    if (size == 0) return fault(ctx, "has an unknown dtype", name);
    if (t.data == 0) return fault(ctx, "is NULL", name);
    int64_t lo = 0, hi = 0;
    for (int d = 0; d < p.ndim; ++d) {
        if (p.sizes[d] <= 0) return true;  // nothing to touch
        const int64_t span = (p.sizes[d] - 1) * t.strides[d];
        (span < 0 ? lo : hi) += span;
    }
    const auto first = static_cast<uint64_t>(static_cast<int64_t>(t.data) + lo * size);
    const auto bytes = static_cast<uint64_t>((hi - lo + 1) * size);
    if (!ctx->isDeviceRange(ctx, reinterpret_cast<const void*>(first), bytes)) {
        return fault(ctx, "addresses memory that is not device memory of this device", name);
    }
    return true;
}

int64_t offsetOf(const mtiaTorchElementwise& p, const mtiaTorchTensorArg& t, uint64_t linear) {
    int64_t offset = 0;
    for (int d = p.ndim - 1; d >= 0; --d) {
        const auto size = static_cast<uint64_t>(p.sizes[d]);
        offset += static_cast<int64_t>(linear % size) * t.strides[d];
        linear /= size;
    }
    return offset;
}

char* at(const mtiaTorchTensorArg& t, int64_t offset) {
    return reinterpret_cast<char*>(t.data) + offset * elementSize(t.dtype);
}

// Integer arithmetic wraps around, as PyTorch's does on the CPU (and without undefined behaviour).
int64_t wrapAdd(int64_t a, int64_t b) {
    return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t wrapMul(int64_t a, int64_t b) {
    return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

bool usesA(int32_t op) {
    return op != mtiaTorchOpFill;
}
bool usesB(int32_t op) {
    return op == mtiaTorchOpLinComb || op == mtiaTorchOpMul || op == mtiaTorchOpThresholdBackward;
}

void apply(const mtiaTorchElementwise& p, uint64_t i) {
    char* out = at(p.out, offsetOf(p, p.out, i));
    const char* a = usesA(p.op) ? at(p.a, offsetOf(p, p.a, i)) : nullptr;
    const char* b = usesB(p.op) ? at(p.b, offsetOf(p, p.b, i)) : nullptr;
    if (isFloating(p.out.dtype) || p.out.dtype == mtiaTorchBool) {
        double v = 0.0;
        switch (p.op) {
        case mtiaTorchOpCopy: v = loadDouble(a, p.a.dtype); break;
        case mtiaTorchOpFill: v = p.alpha; break;
        case mtiaTorchOpLinComb:
            v = p.alpha * loadDouble(a, p.a.dtype) + p.beta * loadDouble(b, p.b.dtype);
            break;
        case mtiaTorchOpScale: v = p.alpha * loadDouble(a, p.a.dtype); break;
        case mtiaTorchOpMul: v = loadDouble(a, p.a.dtype) * loadDouble(b, p.b.dtype); break;
        case mtiaTorchOpRelu:
            v = loadDouble(a, p.a.dtype);
            v = v < 0.0 ? 0.0 : v;
            break;
        case mtiaTorchOpSumInto: v = loadDouble(out, p.out.dtype) + loadDouble(a, p.a.dtype); break;
        case mtiaTorchOpThresholdBackward:
            v = loadDouble(b, p.b.dtype) <= p.alpha ? 0.0 : loadDouble(a, p.a.dtype);
            break;
        default: break;
        }
        storeDouble(out, p.out.dtype, v);
    } else {
        int64_t v = 0;
        switch (p.op) {
        case mtiaTorchOpCopy: v = loadInt(a, p.a.dtype); break;
        case mtiaTorchOpFill: v = p.ialpha; break;
        case mtiaTorchOpLinComb:
            v = wrapAdd(wrapMul(p.ialpha, loadInt(a, p.a.dtype)),
                        wrapMul(p.ibeta, loadInt(b, p.b.dtype)));
            break;
        case mtiaTorchOpScale: v = wrapMul(p.ialpha, loadInt(a, p.a.dtype)); break;
        case mtiaTorchOpMul: v = wrapMul(loadInt(a, p.a.dtype), loadInt(b, p.b.dtype)); break;
        case mtiaTorchOpRelu: v = std::max<int64_t>(0, loadInt(a, p.a.dtype)); break;
        case mtiaTorchOpSumInto:
            v = wrapAdd(loadInt(out, p.out.dtype), loadInt(a, p.a.dtype));
            break;
        case mtiaTorchOpThresholdBackward:
            v = loadInt(b, p.b.dtype) <= p.ialpha ? 0 : loadInt(a, p.a.dtype);
            break;
        default: break;
        }
        storeInt(out, p.out.dtype, v);
    }
}

}  // namespace

MTIA_SIM_KERNEL_ARGS(mtia_torch_elementwise, 1, sizeof(mtiaTorchElementwise));

MTIA_SIM_KERNEL(mtia_torch_elementwise) {
    mtiaTorchElementwise p;
    std::memcpy(&p, args[0], sizeof p);
    if (p.op < mtiaTorchOpCopy || p.op > mtiaTorchOpThresholdBackward) {
        fault(ctx, "is not an operation", "op");
        return;
    }
    if (p.ndim < 0 || p.ndim > MTIA_TORCH_MAX_DIMS) {
        fault(ctx, "is out of range", "ndim");
        return;
    }
    // Sums write one output element from many input elements: one block does it all, in order.
    const bool single = p.op == mtiaTorchOpSumInto;
    const uint64_t blocks = single ? 1 : blockCount(ctx);
    const uint64_t block = blockIndex(ctx);
    if (block >= blocks) return;
    const uint64_t chunk = p.numel / blocks + (p.numel % blocks != 0 ? 1 : 0);
    const uint64_t begin = std::min(p.numel, block * chunk);
    const uint64_t end = std::min(p.numel, begin + chunk);
    if (begin >= end) return;
    if (!checkTensor(ctx, p, p.out, "out")) return;
    if (usesA(p.op) && !checkTensor(ctx, p, p.a, "a")) return;
    if (usesB(p.op) && !checkTensor(ctx, p, p.b, "b")) return;
    for (uint64_t i = begin; i < end; ++i) apply(p, i);
}
