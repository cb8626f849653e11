// 2-d pooling on the device, forward and backward: max pooling with indices (NaN wins, as on the
// CPU), average pooling (padding, ceil mode windows, count_include_pad, divisor_override) and
// adaptive average pooling. The launch's blocks split the planes (N * C) between them. float32,
// float16 and bfloat16 compute in float (one rounding at the store), float64 in double, integers
// (max pooling, and int64 average pooling, whose division truncates as the CPU's) in int64; sums
// run in window order, as the CPU's.
#include "dtype_access.h"
#include "pool_params.h"

#include <limits>
#include <type_traits>
#include <vector>

namespace {

using namespace mtia_kernels;

constexpr const char* kName = "mtia_torch_pool2d";

// Typed element access: T the stored type (float, double, or uint16_t for half/bfloat16), Acc the
// compute type.
template <class T, class Acc>
struct Elem {
    int32_t dtype;
    Acc load(const T* p) const {
        if constexpr (std::is_same_v<T, uint16_t>) {
            return dtype == mtiaTorchFloat16 ? halfToFloat(*p) : bf16ToFloat(*p);
        } else {
            return *p;
        }
    }
    void store(T* p, Acc v) const {
        if constexpr (std::is_same_v<T, uint16_t>) {
            *p = dtype == mtiaTorchFloat16 ? floatToHalf(v) : floatToBf16(v);
        } else {
            *p = static_cast<T>(v);
        }
    }
};

template <class Acc>
bool isNan(Acc v) {
    if constexpr (std::is_floating_point_v<Acc>) {
        return std::isnan(v);
    } else {
        return false;
    }
}

int64_t adaptiveStart(int64_t o, int64_t in, int64_t out) {
    return (o * in) / out;
}
int64_t adaptiveEnd(int64_t o, int64_t in, int64_t out) {
    return ((o + 1) * in + out - 1) / out;
}

// The average window of output (oh, ow): clipped bounds and its divisor.
struct AvgWindow {
    int64_t h0, h1, w0, w1;
    int64_t divisor;
};
AvgWindow avgWindow(const mtiaTorchPool2d& p, int64_t oh, int64_t ow) {
    int64_t h0 = oh * p.sH - p.pH, w0 = ow * p.sW - p.pW;
    int64_t h1 = std::min(h0 + p.kH, p.inH + p.pH), w1 = std::min(w0 + p.kW, p.inW + p.pW);
    const int64_t padded = (h1 - h0) * (w1 - w0);
    h0 = std::max<int64_t>(h0, 0);
    w0 = std::max<int64_t>(w0, 0);
    h1 = std::min(h1, p.inH);
    w1 = std::min(w1, p.inW);
    int64_t divisor = p.divisorOverride != 0   ? p.divisorOverride
                      : p.countIncludePad != 0 ? padded
                                               : (h1 - h0) * (w1 - w0);
    return {h0, h1, w0, w1, divisor};
}

// Max pooling of one plane whose windows are all whole and dense; KH x KW known at compile time,
// or 0 for p.kH x p.kW. NaN wins, and of equal values the first in window order, as the CPU's.
template <int KH, int KW, class T, class Acc>
void denseMax(const mtiaTorchPool2d& p, const Elem<T, Acc>& e, const T* in, T* out, int64_t* idx) {
    const int64_t kH = KH > 0 ? KH : p.kH, kW = KW > 0 ? KW : p.kW;
    for (int64_t oh = 0; oh < p.outH; ++oh) {
        for (int64_t ow = 0; ow < p.outW; ++ow) {
            const int64_t first = oh * p.sH * p.inW + ow * p.sW;
            int64_t best = first;
            Acc bestValue = std::numeric_limits<Acc>::has_infinity
                                ? -std::numeric_limits<Acc>::infinity()
                                : std::numeric_limits<Acc>::lowest();
            for (int64_t h = 0; h < kH; ++h) {
                const int64_t row = first + h * p.inW;
                for (int64_t w = 0; w < kW; ++w) {
                    // A select, not a branch: random data mispredicts half of them.
                    const Acc v = e.load(in + row + w);
                    const bool take = v > bestValue || isNan(v);
                    bestValue = take ? v : bestValue;
                    best = take ? row + w : best;
                }
            }
            e.store(out + oh * p.outW + ow, bestValue);
            idx[oh * p.outW + ow] = best;
        }
    }
}

template <class T, class Acc>
void plane(const mtiaTorchPool2d& p, int64_t c) {
    const Elem<T, Acc> e{p.dtype};
    const int64_t inPlane = p.inH * p.inW, outPlane = p.outH * p.outW;
    auto* in = reinterpret_cast<T*>(p.input) + c * inPlane;
    auto* out = reinterpret_cast<T*>(p.output) + c * outPlane;
    auto* idx = reinterpret_cast<int64_t*>(p.indices) + c * outPlane;
    switch (p.op) {
    case mtiaTorchPoolMax:
        if (p.pH == 0 && p.pW == 0 && p.dH == 1 && p.dW == 1 &&
            (p.outH - 1) * p.sH + p.kH <= p.inH && (p.outW - 1) * p.sW + p.kW <= p.inW) {
            // Every window whole and dense (no padding, no dilation, no ceil-mode overhang):
            // the same scan in window order, without the clipping; 2x2 and 3x3 unrolled.
            if (p.kH == 2 && p.kW == 2) {
                denseMax<2, 2>(p, e, in, out, idx);
            } else if (p.kH == 3 && p.kW == 3) {
                denseMax<3, 3>(p, e, in, out, idx);
            } else {
                denseMax<0, 0>(p, e, in, out, idx);
            }
            break;
        }
        for (int64_t oh = 0; oh < p.outH; ++oh) {
            int64_t h0 = oh * p.sH - p.pH;
            const int64_t h1 = std::min(h0 + (p.kH - 1) * p.dH + 1, p.inH);
            while (h0 < 0) h0 += p.dH;
            for (int64_t ow = 0; ow < p.outW; ++ow) {
                int64_t w0 = ow * p.sW - p.pW;
                const int64_t w1 = std::min(w0 + (p.kW - 1) * p.dW + 1, p.inW);
                while (w0 < 0) w0 += p.dW;
                int64_t best = h0 * p.inW + w0;
                Acc bestValue = std::numeric_limits<Acc>::has_infinity
                                    ? -std::numeric_limits<Acc>::infinity()
                                    : std::numeric_limits<Acc>::lowest();
                for (int64_t h = h0; h < h1; h += p.dH) {
                    for (int64_t w = w0; w < w1; w += p.dW) {
                        const Acc v = e.load(in + h * p.inW + w);
                        if (v > bestValue || isNan(v)) {
                            bestValue = v;
                            best = h * p.inW + w;
                        }
                    }
                }
                e.store(out + oh * p.outW + ow, bestValue);
                idx[oh * p.outW + ow] = best;
            }
        }
        break;
    case mtiaTorchPoolMaxBackward: {
        // input: the gradient of the input (written), output: the gradient of the output.
        if constexpr (std::is_same_v<T, Acc>) {
            // Stored as computed: the sums go straight into the gradient.
            for (int64_t i = 0; i < inPlane; ++i) in[i] = Acc(0);
            for (int64_t o = 0; o < outPlane; ++o) {
                const int64_t i = idx[o];
                if (i >= 0 && i < inPlane) in[i] += out[o];
            }
            break;
        }
        std::vector<Acc> acc(static_cast<size_t>(inPlane), Acc(0));
        for (int64_t o = 0; o < outPlane; ++o) {
            const int64_t i = idx[o];
            if (i >= 0 && i < inPlane) acc[i] += e.load(out + o);
        }
        for (int64_t i = 0; i < inPlane; ++i) e.store(in + i, acc[i]);
        break;
    }
    case mtiaTorchPoolAvg:
        for (int64_t oh = 0; oh < p.outH; ++oh) {
            for (int64_t ow = 0; ow < p.outW; ++ow) {
                const AvgWindow win = avgWindow(p, oh, ow);
                Acc sum = 0;
                if (win.h0 < win.h1 && win.w0 < win.w1) {
                    for (int64_t h = win.h0; h < win.h1; ++h)
                        for (int64_t w = win.w0; w < win.w1; ++w) sum += e.load(in + h * p.inW + w);
                    sum /= static_cast<Acc>(win.divisor);
                }
                e.store(out + oh * p.outW + ow, sum);
            }
        }
        break;
    case mtiaTorchPoolAvgBackward: {
        std::vector<Acc> acc(static_cast<size_t>(inPlane), Acc(0));
        for (int64_t oh = 0; oh < p.outH; ++oh) {
            for (int64_t ow = 0; ow < p.outW; ++ow) {
                const AvgWindow win = avgWindow(p, oh, ow);
                if (win.h0 >= win.h1 || win.w0 >= win.w1) continue;
                const Acc delta = e.load(out + oh * p.outW + ow) / static_cast<Acc>(win.divisor);
                for (int64_t h = win.h0; h < win.h1; ++h)
                    for (int64_t w = win.w0; w < win.w1; ++w) acc[h * p.inW + w] += delta;
            }
        }
        for (int64_t i = 0; i < inPlane; ++i) e.store(in + i, acc[i]);
        break;
    }
    case mtiaTorchPoolAdaptiveAvg:
        for (int64_t oh = 0; oh < p.outH; ++oh) {
            const int64_t h0 = adaptiveStart(oh, p.inH, p.outH),
                          h1 = adaptiveEnd(oh, p.inH, p.outH);
            for (int64_t ow = 0; ow < p.outW; ++ow) {
                const int64_t w0 = adaptiveStart(ow, p.inW, p.outW);
                const int64_t w1 = adaptiveEnd(ow, p.inW, p.outW);
                Acc sum = 0;
                for (int64_t h = h0; h < h1; ++h)
                    for (int64_t w = w0; w < w1; ++w) sum += e.load(in + h * p.inW + w);
                e.store(out + oh * p.outW + ow, sum / static_cast<Acc>((h1 - h0) * (w1 - w0)));
            }
        }
        break;
    case mtiaTorchPoolAdaptiveAvgBackward: {
        std::vector<Acc> acc(static_cast<size_t>(inPlane), Acc(0));
        for (int64_t oh = 0; oh < p.outH; ++oh) {
            const int64_t h0 = adaptiveStart(oh, p.inH, p.outH),
                          h1 = adaptiveEnd(oh, p.inH, p.outH);
            for (int64_t ow = 0; ow < p.outW; ++ow) {
                const int64_t w0 = adaptiveStart(ow, p.inW, p.outW);
                const int64_t w1 = adaptiveEnd(ow, p.inW, p.outW);
                const Acc delta =
                    e.load(out + oh * p.outW + ow) / static_cast<Acc>((h1 - h0) * (w1 - w0));
                for (int64_t h = h0; h < h1; ++h)
                    for (int64_t w = w0; w < w1; ++w) acc[h * p.inW + w] += delta;
            }
        }
        for (int64_t i = 0; i < inPlane; ++i) e.store(in + i, acc[i]);
        break;
    }
    default: break;
    }
}

}  // namespace

MTIA_SIM_KERNEL_ARGS(mtia_torch_pool2d, 1, sizeof(mtiaTorchPool2d));

MTIA_SIM_KERNEL(mtia_torch_pool2d) {
    mtiaTorchPool2d p;
    std::memcpy(&p, args[0], sizeof p);
    if (p.op < mtiaTorchPoolMax || p.op > mtiaTorchPoolAdaptiveAvgBackward ||
        p.dtype == mtiaTorchBool || elementSize(p.dtype) == 0) {
        fault(ctx, kName, "bad op or dtype");
        return;
    }
    if (p.planes < 0 || p.inH <= 0 || p.inW <= 0 || p.outH <= 0 || p.outW <= 0 || p.kH <= 0 ||
        p.kW <= 0 || p.sH <= 0 || p.sW <= 0 || p.dH <= 0 || p.dW <= 0 || p.pH < 0 || p.pW < 0) {
        fault(ctx, kName, "bad geometry");
        return;
    }
    const int64_t in[1] = {p.planes * p.inH * p.inW}, out[1] = {p.planes * p.outH * p.outW};
    const int64_t one[1] = {1};
    const bool indexed = p.op == mtiaTorchPoolMax || p.op == mtiaTorchPoolMaxBackward;
    if (!checkRange(ctx, kName, "input", p.input, p.dtype, 1, in, one) ||
        !checkRange(ctx, kName, "output", p.output, p.dtype, 1, out, one) ||
        (indexed && !checkRange(ctx, kName, "indices", p.indices, mtiaTorchInt64, 1, out, one)))
        return;
    const Range planes = blockRange(ctx, static_cast<uint64_t>(p.planes));
    for (uint64_t c = planes.begin; c < planes.end; ++c) {
        const auto i = static_cast<int64_t>(c);
        switch (p.dtype) {
        case mtiaTorchFloat32: plane<float, float>(p, i); break;
        case mtiaTorchFloat64: plane<double, double>(p, i); break;
        case mtiaTorchFloat16:
        case mtiaTorchBFloat16: plane<uint16_t, float>(p, i); break;
        case mtiaTorchUInt8: plane<uint8_t, int64_t>(p, i); break;
        case mtiaTorchInt8: plane<int8_t, int64_t>(p, i); break;
        case mtiaTorchInt16: plane<int16_t, int64_t>(p, i); break;
        case mtiaTorchInt32: plane<int32_t, int64_t>(p, i); break;
        default: plane<int64_t, int64_t>(p, i); break;
        }
    }
}
