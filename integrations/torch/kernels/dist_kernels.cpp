// The reduction of the c10d backend's same-host collectives: each element of the output combines
// the same element of every process's staging buffer, read where it lies (peers' buffers are mapped
// into this process with IPC handles), so no data goes through host memory on the way.
#include "dist_params.h"
#include "dtype_access.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

namespace {

using namespace mtia_kernels;

constexpr const char* kDistReduce = "mtia_torch_dist_reduce";

// Floating types combine in double: min and max propagate NaN, as torch.minimum/maximum and NCCL
// do.
double combineFloat(int32_t op, double a, double b) {
    switch (op) {
    case mtiaTorchDistProduct: return a * b;
    case mtiaTorchDistMin: return (std::isnan(a) || std::isnan(b)) ? NAN : std::min(a, b);
    case mtiaTorchDistMax: return (std::isnan(a) || std::isnan(b)) ? NAN : std::max(a, b);
    default: return a + b;
    }
}

// Integers wrap around as the CPU's do (unsigned arithmetic: signed overflow is undefined in C++).
int64_t combineInt(int32_t op, int64_t a, int64_t b) {
    switch (op) {
    case mtiaTorchDistProduct:
        return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
    case mtiaTorchDistMin: return std::min(a, b);
    case mtiaTorchDistMax: return std::max(a, b);
    default: return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
    }
}

// One element type known at compile time: the switches of loadDouble/loadInt fold away.
template <int32_t D>
void reduceRange(const mtiaTorchDistReduce& p, Range r) {
    const int size = elementSize(D);
    const char* src[MTIA_TORCH_DIST_MAX_PEERS];
    for (int s = 0; s < p.sources; ++s) src[s] = reinterpret_cast<const char*>(p.src[s]);
    char* dst = reinterpret_cast<char*>(p.dst);
    if constexpr (D >= mtiaTorchFloat16 && D <= mtiaTorchFloat64) {
        for (uint64_t i = r.begin; i < r.end; ++i) {
            double v = loadDouble(src[0] + i * size, D);
            for (int s = 1; s < p.sources; ++s)
                v = combineFloat(p.op, v, loadDouble(src[s] + i * size, D));
            if (p.op == mtiaTorchDistAvg) v /= p.sources;
            storeDouble(dst + i * size, D, v);
        }
    } else {
        // bool: sum is or and product is and (as NCCL maps them), which max and min give on 0/1.
        int32_t op = p.op;
        if (D == mtiaTorchBool && (op == mtiaTorchDistSum || op == mtiaTorchDistAvg))
            op = mtiaTorchDistMax;
        if (D == mtiaTorchBool && op == mtiaTorchDistProduct) op = mtiaTorchDistMin;
        for (uint64_t i = r.begin; i < r.end; ++i) {
            int64_t v = loadInt(src[0] + i * size, D);
            for (int s = 1; s < p.sources; ++s)
                v = combineInt(op, v, loadInt(src[s] + i * size, D));
            if (op == mtiaTorchDistAvg) {
                // The sum wraps in the dtype before the division, as NCCL's (the sum is exact
                // modulo the dtype's range, not beyond it).
                char wrapped[8];
                storeInt(wrapped, D, v);
                v = loadInt(wrapped, D) / p.sources;
            }
            storeInt(dst + i * size, D, v);
        }
    }
}

// The common cases in the element type itself, a tile at a time, so that the compiler vectorises
// the loops (the generic path converts every element and switches on the op per element, which
// made the reduction, not the copies, the bottleneck of a large all_reduce): float and double sum,
// avg and product (combined in the type, as gloo does, not in double), and 32/64-bit integer sum,
// avg, product, min and max (unsigned arithmetic wraps as the generic path does). A whole tile is
// read before it is written, so dst may still be one of the sources.
template <typename T, bool = std::is_integral_v<T>>
struct AccumulatorOf {
    using type = T;
};
template <typename T>
struct AccumulatorOf<T, true> {
    using type = std::make_unsigned_t<T>;
};

template <typename T, int32_t Op>
void reduceNative(const mtiaTorchDistReduce& p, Range r) {
    constexpr uint64_t kTile = 1024;
    using Acc = typename AccumulatorOf<T>::type;
    T* dst = reinterpret_cast<T*>(p.dst);
    Acc acc[kTile];
    for (uint64_t base = r.begin; base < r.end; base += kTile) {
        const uint64_t n = std::min(kTile, r.end - base);
        const T* first = reinterpret_cast<const T*>(p.src[0]) + base;
        for (uint64_t i = 0; i < n; ++i) acc[i] = static_cast<Acc>(first[i]);
        for (int s = 1; s < p.sources; ++s) {
            const T* src = reinterpret_cast<const T*>(p.src[s]) + base;
            for (uint64_t i = 0; i < n; ++i) {
                const Acc v = static_cast<Acc>(src[i]);
                if constexpr (Op == mtiaTorchDistProduct) {
                    acc[i] = static_cast<Acc>(acc[i] * v);
                } else if constexpr (Op == mtiaTorchDistMin) {
                    acc[i] = static_cast<T>(v) < static_cast<T>(acc[i]) ? v : acc[i];
                } else if constexpr (Op == mtiaTorchDistMax) {
                    acc[i] = static_cast<T>(v) > static_cast<T>(acc[i]) ? v : acc[i];
                } else {
                    acc[i] = static_cast<Acc>(acc[i] + v);
                }
            }
        }
        if constexpr (Op == mtiaTorchDistAvg) {
            const T sources = static_cast<T>(p.sources);
            for (uint64_t i = 0; i < n; ++i) dst[base + i] = static_cast<T>(acc[i]) / sources;
        } else {
            for (uint64_t i = 0; i < n; ++i) dst[base + i] = static_cast<T>(acc[i]);
        }
    }
}

template <typename T>
bool reduceNativeOp(const mtiaTorchDistReduce& p, Range r) {
    switch (p.op) {
    case mtiaTorchDistSum: reduceNative<T, mtiaTorchDistSum>(p, r); return true;
    case mtiaTorchDistAvg: reduceNative<T, mtiaTorchDistAvg>(p, r); return true;
    case mtiaTorchDistProduct: reduceNative<T, mtiaTorchDistProduct>(p, r); return true;
    case mtiaTorchDistMin:
    case mtiaTorchDistMax:
        // Floating min/max propagate NaN: the generic path.
        if constexpr (std::is_floating_point_v<T>) return false;
        if (p.op == mtiaTorchDistMin) {
            reduceNative<T, mtiaTorchDistMin>(p, r);
        } else {
            reduceNative<T, mtiaTorchDistMax>(p, r);
        }
        return true;
    default: return false;
    }
}

bool reduceFast(const mtiaTorchDistReduce& p, Range r) {
    switch (p.dtype) {
    case mtiaTorchFloat32: return reduceNativeOp<float>(p, r);
    case mtiaTorchFloat64: return reduceNativeOp<double>(p, r);
    case mtiaTorchInt32: return reduceNativeOp<int32_t>(p, r);
    case mtiaTorchInt64: return reduceNativeOp<int64_t>(p, r);
    default: return false;
    }
}

}  // namespace

MTIA_SIM_KERNEL_ARGS(mtia_torch_dist_reduce, 1, sizeof(mtiaTorchDistReduce));

MTIA_SIM_KERNEL(mtia_torch_dist_reduce) {
    mtiaTorchDistReduce p;
    std::memcpy(&p, args[0], sizeof p);
    if (p.sources < 1 || p.sources > MTIA_TORCH_DIST_MAX_PEERS || p.count < 0 ||
        p.op < mtiaTorchDistSum || p.op > mtiaTorchDistMax || elementSize(p.dtype) == 0) {
        fault(ctx, kDistReduce, "bad parameters");
        return;
    }
    const Range r = blockRange(ctx, static_cast<uint64_t>(p.count));
    if (r.begin >= r.end) return;
    // Only the output is checked against this device's memory: the sources are other processes'
    // buffers, on other devices of the machine.
    const int64_t sizes[1] = {p.count}, unit[1] = {1};
    if (!checkRange(ctx, kDistReduce, "dst", p.dst, p.dtype, 1, sizes, unit)) return;
    if (reduceFast(p, r)) return;
    switch (p.dtype) {
    case mtiaTorchBool: reduceRange<mtiaTorchBool>(p, r); break;
    case mtiaTorchUInt8: reduceRange<mtiaTorchUInt8>(p, r); break;
    case mtiaTorchInt8: reduceRange<mtiaTorchInt8>(p, r); break;
    case mtiaTorchInt16: reduceRange<mtiaTorchInt16>(p, r); break;
    case mtiaTorchInt32: reduceRange<mtiaTorchInt32>(p, r); break;
    case mtiaTorchInt64: reduceRange<mtiaTorchInt64>(p, r); break;
    case mtiaTorchFloat16: reduceRange<mtiaTorchFloat16>(p, r); break;
    case mtiaTorchBFloat16: reduceRange<mtiaTorchBFloat16>(p, r); break;
    case mtiaTorchFloat32: reduceRange<mtiaTorchFloat32>(p, r); break;
    default: reduceRange<mtiaTorchFloat64>(p, r); break;
    }
}
