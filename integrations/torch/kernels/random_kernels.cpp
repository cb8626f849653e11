// Random number kernels: Philox4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel random numbers:
// as easy as 1, 2, 3", SC 2011), a counter-based generator: the four 32-bit numbers of counter c
// under key k are a pure function of (k, c), so any block computes any element's numbers without
// the others. See random_params.h for how elements map to counters.
#include "dtype_access.h"
#include "random_params.h"

namespace {

using namespace mtia_kernels;

struct Words {
    uint32_t w[4];
};

inline void mulHiLo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
    const uint64_t p = uint64_t{a} * b;
    hi = static_cast<uint32_t>(p >> 32);
    lo = static_cast<uint32_t>(p);
}

// Ten rounds of the Philox S-box with the published multipliers and Weyl key increments.
inline Words philox(uint64_t seed, uint64_t counter) {
    uint32_t c0 = static_cast<uint32_t>(counter), c1 = static_cast<uint32_t>(counter >> 32);
    uint32_t c2 = 0, c3 = 0;
    uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
    for (int round = 0; round < 10; ++round) {
        uint32_t hi0, lo0, hi1, lo1;
        mulHiLo(0xD2511F53u, c0, hi0, lo0);
        mulHiLo(0xCD9E8D57u, c2, hi1, lo1);
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    return Words{{c0, c1, c2, c3}};
}

// Uniform in [0, 1): 24 bits for float, 53 for double.
inline float unitFloat(uint32_t x) {
    return static_cast<float>(x >> 8) * 0x1p-24f;
}
inline double unitDouble(uint32_t lo, uint32_t hi) {
    return static_cast<double>(((uint64_t{hi} << 32) | lo) >> 11) * 0x1p-53;
}

// The value v of a floating dtype as stored (half and bfloat16 rounded), for the uniform bound.
inline float rounded(int32_t dtype, float v) {
    if (dtype == mtiaTorchFloat16) return halfToFloat(floatToHalf(v));
    if (dtype == mtiaTorchBFloat16) return bf16ToFloat(floatToBf16(v));
    return v;
}

// An N-d index walked in row-major order with the element offsets of up to three operands.
struct Walker {
    int ndim;
    const int64_t* sizes;
    const int64_t* strides[3];
    int64_t index[MTIA_TORCH_MAX_DIMS] = {};
    int64_t offset[3] = {0, 0, 0};

    Walker(const mtiaTorchRandom& p, uint64_t linear) : ndim(p.ndim), sizes(p.sizes) {
        strides[0] = p.out.strides;
        strides[1] = p.in.strides;
        strides[2] = p.mask.strides;
        for (int d = ndim - 1; d >= 0; --d) {  // once per block
            const auto size = static_cast<uint64_t>(sizes[d]);
            index[d] = static_cast<int64_t>(linear % size);
            linear /= size;
            for (int t = 0; t < 3; ++t) offset[t] += index[d] * strides[t][d];
        }
    }
    void step() {
        for (int d = ndim - 1; d >= 0; --d) {
            for (int t = 0; t < 3; ++t) offset[t] += strides[t][d];
            if (++index[d] < sizes[d]) return;
            for (int t = 0; t < 3; ++t) offset[t] -= index[d] * strides[t][d];
            index[d] = 0;
        }
    }
};

// The offsets of operands that are all contiguous over the index space: the linear index.
struct Linear {
    int64_t offset[3];
    Linear(const mtiaTorchRandom&, uint64_t linear) {
        offset[0] = offset[1] = offset[2] = static_cast<int64_t>(linear);
    }
    void step() {
        ++offset[0];
        ++offset[1];
        ++offset[2];
    }
};

bool contiguous(const mtiaTorchRandom& p, const mtiaTorchTensorArg& t) {
    int64_t expected = 1;
    for (int d = p.ndim - 1; d >= 0; --d) {
        if (p.sizes[d] != 1 && t.strides[d] != expected) return false;
        expected *= p.sizes[d];
    }
    return true;
}

inline char* addressOf(const mtiaTorchTensorArg& t, int64_t offset) {
    return reinterpret_cast<char*>(t.data) + offset * elementSize(t.dtype);
}

constexpr const char* kRandom = "mtia_torch_random";

// Element e (0..3 narrow, 0..1 wide) of a counter's numbers as a uniform in [0, 1), in float or
// double as the output's dtype computes.
inline double uniformOf(const Words& w, int e, bool wide) {
    return wide ? unitDouble(w.w[2 * e], w.w[2 * e + 1]) : unitFloat(w.w[e]);
}

// The standard normals of a counter's elements (Box-Muller): elements 2k and 2k+1 share a pair of
// uniforms, cos for the even one and sin for the odd one; float math for all but float64.
inline void normalsOf(const Words& w, bool dbl, double* z) {
    if (dbl) {
        const double u1 = unitDouble(w.w[0], w.w[1]), u2 = unitDouble(w.w[2], w.w[3]);
        const double r = std::sqrt(-2.0 * std::log1p(-u1));
        const double t = 6.283185307179586 * u2;
        z[0] = r * std::cos(t);
        z[1] = r * std::sin(t);
        return;
    }
    for (int k = 0; k < 4; k += 2) {
        const float u1 = unitFloat(w.w[k]), u2 = unitFloat(w.w[k + 1]);
        const float r = std::sqrt(-2.0f * std::log1p(-u1));
        const float t = 6.2831853f * u2;
        z[k] = r * std::cos(t);
        z[k + 1] = r * std::sin(t);
    }
}

// One element's value; returns false to fault (a probability outside [0, 1]).
template <class Offsets>
inline bool produce(const mtiaTorchRandom& p, const Words& w, const double* normals, int e,
                    const Offsets& at) {
    char* out = addressOf(p.out, at.offset[0]);
    const bool wide = p.wide != 0;
    const bool dbl = p.out.dtype == mtiaTorchFloat64;
    switch (p.kind) {
    case mtiaTorchRandUniform: {
        if (dbl) {
            const double v = unitDouble(w.w[2 * e], w.w[2 * e + 1]) * (p.b - p.a) + p.a;
            storeAs<double>(out, v == p.b ? p.a : v);
        } else {
            const float from = static_cast<float>(p.a), to = static_cast<float>(p.b);
            const float v = rounded(p.out.dtype, unitFloat(w.w[e]) * (to - from) + from);
            storeDouble(out, p.out.dtype, v == to ? from : v);
        }
        return true;
    }
    case mtiaTorchRandNormal:
        if (dbl) {
            storeAs<double>(out, p.a + p.b * normals[e]);
        } else {
            const auto z = static_cast<float>(normals[e]);
            storeDouble(out, p.out.dtype, static_cast<float>(p.a) + static_cast<float>(p.b) * z);
        }
        return true;
    case mtiaTorchRandBernoulli:
        storeInt(out, p.out.dtype, uniformOf(w, e, wide) < p.a ? 1 : 0);
        return true;
    case mtiaTorchRandBernoulliTensor: {
        const double prob = loadDouble(addressOf(p.in, at.offset[1]), p.in.dtype);
        if (!(prob >= 0.0 && prob <= 1.0)) return false;
        storeInt(out, p.out.dtype, uniformOf(w, e, wide) < prob ? 1 : 0);
        return true;
    }
    case mtiaTorchRandRange: {
        const uint64_t r = wide ? (uint64_t{w.w[2 * e + 1]} << 32) | w.w[2 * e] : w.w[e];
        const uint64_t v = static_cast<uint64_t>(p.base) + (p.range == 0 ? r : r % p.range);
        storeInt(out, p.out.dtype, static_cast<int64_t>(v));
        return true;
    }
    case mtiaTorchRandExponential:
        if (dbl) {
            storeAs<double>(out, -std::log1p(-unitDouble(w.w[2 * e], w.w[2 * e + 1])) / p.a);
        } else {
            const float v = -std::log1p(-unitFloat(w.w[e])) / static_cast<float>(p.a);
            storeDouble(out, p.out.dtype, v);
        }
        return true;
    case mtiaTorchRandDropout: {
        const bool keep = unitFloat(w.w[e]) < p.a;
        storeInt(addressOf(p.mask, at.offset[2]), p.mask.dtype, keep ? 1 : 0);
        const char* in = addressOf(p.in, at.offset[1]);
        // As the CPU's input * mask * scale: the product with 0 keeps NaN and the sign of zero.
        if (dbl) {
            storeAs<double>(out, loadAs<double>(in) * (keep ? 1.0 : 0.0) * p.b);
        } else {
            const float x = loadFloat(in, p.in.dtype) * (keep ? 1.0f : 0.0f);
            storeDouble(out, p.out.dtype, rounded(p.out.dtype, x) * static_cast<float>(p.b));
        }
        return true;
    }
    default: return false;
    }
}

// The dropout backward draws nothing: grad * mask * scale.
template <class Offsets>
void dropoutBackward(const mtiaTorchRandom& p, Range range) {
    Offsets at(p, range.begin);
    const bool dbl = p.out.dtype == mtiaTorchFloat64;
    for (uint64_t i = range.begin; i < range.end; ++i, at.step()) {
        const char* g = addressOf(p.in, at.offset[1]);
        const bool m = loadInt(addressOf(p.mask, at.offset[2]), p.mask.dtype) != 0;
        char* out = addressOf(p.out, at.offset[0]);
        if (dbl) {
            storeAs<double>(out, loadAs<double>(g) * (m ? 1.0 : 0.0) * p.b);
        } else {
            const float x = rounded(p.out.dtype, loadFloat(g, p.in.dtype) * (m ? 1.0f : 0.0f));
            storeDouble(out, p.out.dtype, x * static_cast<float>(p.b));
        }
    }
}

// The launch's (seed, offset): from the params, or from the graph's slot at run time.
bool startOf(const mtiaKernelContext* ctx, const mtiaTorchPhilox& rng, const char* kernel,
             uint64_t& seed, uint64_t& offset) {
    seed = rng.seed;
    offset = rng.offset;
    if (rng.slot == 0) return true;
    const void* slot = reinterpret_cast<const void*>(rng.slot);
    if (!ctx->isDeviceRange(ctx, slot, 16))
        return fault(ctx, kernel, "the Philox slot is not device memory");
    seed = loadAs<uint64_t>(slot);
    offset += loadAs<uint64_t>(static_cast<const char*>(slot) + 8);
    return true;
}

bool usesIn(int32_t kind) {
    return kind == mtiaTorchRandBernoulliTensor || kind == mtiaTorchRandDropout ||
           kind == mtiaTorchRandDropoutBackward;
}
bool usesMask(int32_t kind) {
    return kind == mtiaTorchRandDropout || kind == mtiaTorchRandDropoutBackward;
}

// Blocks split whole counters, so a counter's numbers are computed once.
template <class Offsets>
void draw(const mtiaKernelContext* ctx, const mtiaTorchRandom& p, uint64_t seed, uint64_t offset) {
    const uint64_t perCounter = p.wide ? 2 : 4;
    const uint64_t counters = (p.numel + perCounter - 1) / perCounter;
    const Range groups = blockRange(ctx, counters);
    if (groups.begin >= groups.end) return;
    uint64_t i = groups.begin * perCounter;
    const uint64_t end = std::min(p.numel, groups.end * perCounter);
    Offsets at(p, i);
    double normals[4];
    const bool normal = p.kind == mtiaTorchRandNormal;
    for (uint64_t g = groups.begin; g < groups.end; ++g) {
        const Words w = philox(seed, offset / 4 + g);
        if (normal) normalsOf(w, p.out.dtype == mtiaTorchFloat64, normals);
        for (uint64_t e = 0; e < perCounter && i < end; ++e, ++i, at.step()) {
            if (!produce(p, w, normals, static_cast<int>(e), at)) {
                fault(ctx, kRandom, "bernoulli_ expects all elements of p to be in [0, 1]");
                return;
            }
        }
    }
}

}  // namespace

MTIA_SIM_KERNEL_ARGS(mtia_torch_random, 1, sizeof(mtiaTorchRandom));
MTIA_SIM_KERNEL(mtia_torch_random) {
    mtiaTorchRandom p;
    std::memcpy(&p, args[0], sizeof p);
    if (p.ndim < 0 || p.ndim > MTIA_TORCH_MAX_DIMS) {
        fault(ctx, kRandom, "ndim out of range");
        return;
    }
    if (p.numel == 0) return;
    if (!checkRange(ctx, kRandom, "out", p.out.data, p.out.dtype, p.ndim, p.sizes, p.out.strides))
        return;
    if (usesIn(p.kind) &&
        !checkRange(ctx, kRandom, "in", p.in.data, p.in.dtype, p.ndim, p.sizes, p.in.strides))
        return;
    if (usesMask(p.kind) && !checkRange(ctx, kRandom, "mask", p.mask.data, p.mask.dtype, p.ndim,
                                        p.sizes, p.mask.strides))
        return;
    const bool linear = contiguous(p, p.out) && (!usesIn(p.kind) || contiguous(p, p.in)) &&
                        (!usesMask(p.kind) || contiguous(p, p.mask));
    if (p.kind == mtiaTorchRandDropoutBackward) {
        const Range range = blockRange(ctx, p.numel);
        linear ? dropoutBackward<Linear>(p, range) : dropoutBackward<Walker>(p, range);
        return;
    }
    uint64_t seed, offset;
    if (!startOf(ctx, p.rng, kRandom, seed, offset)) return;
    linear ? draw<Linear>(ctx, p, seed, offset) : draw<Walker>(ctx, p, seed, offset);
}

// Fisher-Yates from the last position down, one counter per position: serial, so one block.
MTIA_SIM_KERNEL_ARGS(mtia_torch_randperm, 1, sizeof(mtiaTorchRandperm));
MTIA_SIM_KERNEL(mtia_torch_randperm) {
    mtiaTorchRandperm p;
    std::memcpy(&p, args[0], sizeof p);
    if (blockIndex(ctx) != 0 || p.n <= 0) return;
    const char* kernel = "mtia_torch_randperm";
    if (!checkRange(ctx, kernel, "out", p.data, p.dtype, 1, &p.n, &p.stride)) return;
    uint64_t seed, offset;
    if (!startOf(ctx, p.rng, kernel, seed, offset)) return;
    char* base = reinterpret_cast<char*>(p.data);
    const int size = elementSize(p.dtype);
    auto at = [&](int64_t k) { return base + k * p.stride * size; };
    for (int64_t k = 0; k < p.n; ++k) storeInt(at(k), p.dtype, k);
    for (int64_t k = p.n - 1; k > 0; --k) {
        const Words w = philox(seed, offset / 4 + static_cast<uint64_t>(k));
        const uint64_t r = (uint64_t{w.w[1]} << 32) | w.w[0];
        const auto j = static_cast<int64_t>(r % static_cast<uint64_t>(k + 1));
        const int64_t a = loadInt(at(k), p.dtype), b = loadInt(at(j), p.dtype);
        storeInt(at(k), p.dtype, b);
        storeInt(at(j), p.dtype, a);
    }
}

// A graph replay's prologue: the generators' current (seed, offset) for its captured launches.
MTIA_SIM_KERNEL_ARGS(mtia_torch_philox_slots, 1, sizeof(mtiaTorchPhiloxSlots));
MTIA_SIM_KERNEL(mtia_torch_philox_slots) {
    mtiaTorchPhiloxSlots p;
    std::memcpy(&p, args[0], sizeof p);
    if (blockIndex(ctx) != 0) return;
    if (p.count < 0 || p.count > MTIA_TORCH_MAX_GRAPH_GENERATORS) {
        fault(ctx, "mtia_torch_philox_slots", "count out of range");
        return;
    }
    void* slots = reinterpret_cast<void*>(p.slots);
    const uint64_t bytes = uint64_t{16} * static_cast<uint32_t>(p.count);
    if (bytes == 0) return;
    if (!ctx->isDeviceRange(ctx, slots, bytes)) {
        fault(ctx, "mtia_torch_philox_slots", "slots are not device memory");
        return;
    }
    std::memcpy(slots, p.values, bytes);
}
