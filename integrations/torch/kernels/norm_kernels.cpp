// Layer norm and batch norm, forward and backward, on the simulated device. Statistics are
// computed (outside the float32 and float64 fast paths of layer norm) in double (the CPU's float
// accumulation for float32, half and bfloat16 is no wider) with two passes (mean, then squared
// deviations), and the variance is the biased one, as the CPU normalises; the running variance
// takes the unbiased estimate, as the CPU's.
#include "dtype_access.h"
#include "norm_params.h"

#include <utility>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace {

using namespace mtia_kernels;

constexpr const char* kLayerNorm = "mtia_torch_layer_norm";
constexpr const char* kBatchNorm = "mtia_torch_batch_norm";

const char* cptr(uint64_t data, int64_t i, int32_t dtype) {
    return reinterpret_cast<const char*>(data) + i * elementSize(dtype);
}
char* ptr(uint64_t data, int64_t i, int32_t dtype) {
    return reinterpret_cast<char*>(data) + i * elementSize(dtype);
}
double ld(uint64_t data, int64_t i, int32_t dtype) {
    return loadDouble(cptr(data, i, dtype), dtype);
}
void st(uint64_t data, int64_t i, int32_t dtype, double v) {
    storeDouble(ptr(data, i, dtype), dtype, v);
}
// v rounded to dtype (a no-op for float64).
double roundAs(double v, int32_t dtype) {
    char tmp[8] = {};
    storeDouble(tmp, dtype, v);
    return loadDouble(tmp, dtype);
}

// An optional per-column (or per-channel) parameter: absent is `otherwise`.
double param(uint64_t data, int64_t i, int32_t dtype, double otherwise) {
    return data ? ld(data, i, dtype) : otherwise;
}

void layerNormRow(const mtiaTorchLayerNorm& p, int64_t r) {
    const int64_t n = p.cols, base = r * n;
    if (p.op == mtiaTorchLayerNormForward) {
        double sum = 0;
        for (int64_t j = 0; j < n; ++j) sum += ld(p.x, base + j, p.xDtype);
        const double mean = sum / static_cast<double>(n);
        double m2 = 0;
        for (int64_t j = 0; j < n; ++j) {
            const double d = ld(p.x, base + j, p.xDtype) - mean;
            m2 += d * d;
        }
        const double rstd = 1.0 / std::sqrt(m2 / static_cast<double>(n) + p.eps);
        for (int64_t j = 0; j < n; ++j) {
            const double xhat = (ld(p.x, base + j, p.xDtype) - mean) * rstd;
            st(p.y, base + j, p.yDtype,
               xhat * param(p.weight, j, p.wDtype, 1.0) + param(p.bias, j, p.wDtype, 0.0));
        }
        if (p.mean) st(p.mean, r, p.statDtype, mean);
        if (p.rstd) st(p.rstd, r, p.statDtype, rstd);
        return;
    }
    // dx = rstd * (a - mean(a) - xhat * mean(a * xhat)), a = dy * weight.
    const double mean = ld(p.mean, r, p.statDtype), rstd = ld(p.rstd, r, p.statDtype);
    double sa = 0, saxhat = 0;
    for (int64_t j = 0; j < n; ++j) {
        const double a = ld(p.gradOut, base + j, p.gDtype) * param(p.weight, j, p.wDtype, 1.0);
        sa += a;
        saxhat += a * (ld(p.x, base + j, p.xDtype) - mean) * rstd;
    }
    const double inv = 1.0 / static_cast<double>(n);
    for (int64_t j = 0; j < n; ++j) {
        const double a = ld(p.gradOut, base + j, p.gDtype) * param(p.weight, j, p.wDtype, 1.0);
        const double xhat = (ld(p.x, base + j, p.xDtype) - mean) * rstd;
        st(p.y, base + j, p.yDtype, rstd * (a - sa * inv - xhat * saxhat * inv));
    }
}

void layerNormColumn(const mtiaTorchLayerNorm& p, int64_t j) {
    double gw = 0, gb = 0;
    for (int64_t r = 0; r < p.rows; ++r) {
        const int64_t i = r * p.cols + j;
        const double dy = ld(p.gradOut, i, p.gDtype);
        gw += dy * (ld(p.x, i, p.xDtype) - ld(p.mean, r, p.statDtype)) * ld(p.rstd, r, p.statDtype);
        gb += dy;
    }
    if (p.gradWeight) st(p.gradWeight, j, p.wDtype, gw);
    if (p.gradBias) st(p.gradBias, j, p.wDtype, gb);
}

// The fast path: every operand float32, or every one float64 (the CPU's float32 layer norm computes
// its statistics and gradients in float, not wider). Typed loops, the sums over four accumulators
// (one vector for float), statistics in two passes.
bool layerNormAllOf(const mtiaTorchLayerNorm& p, int32_t dtype) {
    if (p.xDtype != dtype) return false;
    if ((p.weight || p.bias || p.gradWeight || p.gradBias) && p.wDtype != dtype) return false;
    if ((p.mean || p.rstd) && p.statDtype != dtype) return false;
    if (p.y && p.yDtype != dtype) return false;
    return !p.gradOut || p.gDtype == dtype;
}

// sum over j < n of f(j), over four accumulators.
template <class T, class F>
T sum4(int64_t n, F&& f) {
    T acc[4] = {};
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) {
        for (int k = 0; k < 4; ++k) acc[k] += f(j + k);
    }
    T sum = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    for (; j < n; ++j) sum += f(j);
    return sum;
}

template <class T>
void layerNormRowsTyped(const mtiaTorchLayerNorm& p, Range range) {
    const int64_t n = p.cols;
    const T inv = T(1) / static_cast<T>(n);
    const auto* w = reinterpret_cast<const T*>(p.weight);
    const auto* b = reinterpret_cast<const T*>(p.bias);
    for (uint64_t i = range.begin; i < range.end; ++i) {
        const auto r = static_cast<int64_t>(i);
        const T* x = reinterpret_cast<const T*>(p.x) + r * n;
        T* y = reinterpret_cast<T*>(p.y) + r * n;
        if (p.op == mtiaTorchLayerNormForward) {
            const T mean = sum4<T>(n, [&](int64_t j) { return x[j]; }) * inv;
            const T m2 = sum4<T>(n, [&](int64_t j) {
                const T d = x[j] - mean;
                return d * d;
            });
            const T rstd = T(1) / std::sqrt(m2 * inv + static_cast<T>(p.eps));
            if (w && b) {
                for (int64_t j = 0; j < n; ++j) y[j] = (x[j] - mean) * rstd * w[j] + b[j];
            } else if (w) {
                for (int64_t j = 0; j < n; ++j) y[j] = (x[j] - mean) * rstd * w[j];
            } else if (b) {
                for (int64_t j = 0; j < n; ++j) y[j] = (x[j] - mean) * rstd + b[j];
            } else {
                for (int64_t j = 0; j < n; ++j) y[j] = (x[j] - mean) * rstd;
            }
            if (p.mean) reinterpret_cast<T*>(p.mean)[r] = mean;
            if (p.rstd) reinterpret_cast<T*>(p.rstd)[r] = rstd;
            continue;
        }
        const T* g = reinterpret_cast<const T*>(p.gradOut) + r * n;
        const T mean = reinterpret_cast<const T*>(p.mean)[r];
        const T rstd = reinterpret_cast<const T*>(p.rstd)[r];
        T sa, saxhat;
        if (w) {
            sa = sum4<T>(n, [&](int64_t j) { return g[j] * w[j]; });
            saxhat = sum4<T>(n, [&](int64_t j) { return g[j] * w[j] * ((x[j] - mean) * rstd); });
        } else {
            sa = sum4<T>(n, [&](int64_t j) { return g[j]; });
            saxhat = sum4<T>(n, [&](int64_t j) { return g[j] * ((x[j] - mean) * rstd); });
        }
        const T ma = sa * inv, mx = saxhat * inv;
        if (w) {
            for (int64_t j = 0; j < n; ++j)
                y[j] = rstd * (g[j] * w[j] - ma - (x[j] - mean) * rstd * mx);
        } else {
            for (int64_t j = 0; j < n; ++j) y[j] = rstd * (g[j] - ma - (x[j] - mean) * rstd * mx);
        }
    }
}

// gradWeight and gradBias of the columns in range: the rows added one after another, each as a
// contiguous loop over the columns.
template <class T>
void layerNormColumnsTyped(const mtiaTorchLayerNorm& p, Range range) {
    const auto c0 = static_cast<int64_t>(range.begin), c1 = static_cast<int64_t>(range.end);
    auto* gw = reinterpret_cast<T*>(p.gradWeight);
    auto* gb = reinterpret_cast<T*>(p.gradBias);
    for (int64_t j = c0; j < c1; ++j) {
        if (gw) gw[j] = 0;
        if (gb) gb[j] = 0;
    }
    for (int64_t r = 0; r < p.rows; ++r) {
        const T* x = reinterpret_cast<const T*>(p.x) + r * p.cols;
        const T* g = reinterpret_cast<const T*>(p.gradOut) + r * p.cols;
        const T mean = reinterpret_cast<const T*>(p.mean)[r];
        const T rstd = reinterpret_cast<const T*>(p.rstd)[r];
        if (gw) {
            for (int64_t j = c0; j < c1; ++j) gw[j] += g[j] * ((x[j] - mean) * rstd);
        }
        if (gb) {
            for (int64_t j = c0; j < c1; ++j) gb[j] += g[j];
        }
    }
}

template <class T>
void layerNormTyped(const mtiaTorchLayerNorm& p, Range range) {
    if (p.op == mtiaTorchLayerNormBackwardParams) {
        layerNormColumnsTyped<T>(p, range);
    } else {
        layerNormRowsTyped<T>(p, range);
    }
}

bool layerNormOperandsOk(const mtiaKernelContext* ctx, const mtiaTorchLayerNorm& p) {
    const int64_t all[1] = {p.rows * p.cols}, rows[1] = {p.rows}, cols[1] = {p.cols}, unit[1] = {1};
    struct Operand {
        const char* name;
        uint64_t data;
        int32_t dtype;
        const int64_t* size;
    } ops[] = {{"x", p.x, p.xDtype, all},
               {"y", p.y, p.yDtype, all},
               {"weight", p.weight, p.wDtype, cols},
               {"bias", p.bias, p.wDtype, cols},
               {"mean", p.mean, p.statDtype, rows},
               {"rstd", p.rstd, p.statDtype, rows},
               {"gradOut", p.gradOut, p.gDtype, all},
               {"gradWeight", p.gradWeight, p.wDtype, cols},
               {"gradBias", p.gradBias, p.wDtype, cols}};
    for (const Operand& o : ops) {
        if (o.data && !checkRange(ctx, kLayerNorm, o.name, o.data, o.dtype, 1, o.size, unit))
            return false;
    }
    return true;
}

// Walks every element of one channel: the dims other than 1, with the offsets of up to four
// operands kept in step (no division per element).
struct ChannelWalk {
    const mtiaTorchBatchNorm& p;
    const int64_t* strides[4];
    template <class F>
    void run(int64_t c, F&& f) const {
        int64_t off[4];
        for (int k = 0; k < 4; ++k) off[k] = strides[k] ? c * strides[k][1] : 0;
        int dims[MTIA_TORCH_MAX_DIMS];
        int nd = 0;
        for (int d = 0; d < p.ndim; ++d) {
            if (d == 1) continue;
            if (p.sizes[d] == 0) return;
            dims[nd++] = d;
        }
        int64_t idx[MTIA_TORCH_MAX_DIMS] = {};
        for (;;) {
            f(off);
            int k = nd - 1;
            for (; k >= 0; --k) {
                const int d = dims[k];
                for (int t = 0; t < 4; ++t)
                    if (strides[t]) off[t] += strides[t][d];
                if (++idx[k] < p.sizes[d]) break;
                for (int t = 0; t < 4; ++t)
                    if (strides[t]) off[t] -= strides[t][d] * p.sizes[d];
                idx[k] = 0;
            }
            if (k < 0) return;
        }
    }
};

// Whether strides are those of a contiguous (N, C, ...) tensor of sizes (size-1 dims aside).
bool contiguousNchw(const mtiaTorchBatchNorm& p, const int64_t* strides) {
    int64_t expect = 1;
    for (int d = p.ndim - 1; d >= 0; --d) {
        if (p.sizes[d] != 1 && strides[d] != expect) return false;
        expect *= p.sizes[d];
    }
    return true;
}

// The float32 contiguous (N, C, ...) case, the common one: typed loops over each image's plane of
// the channel. Statistics in double as batchNormChannel's (over four partial sums, so that they do
// not wait on one another); the per-element transforms in float with per-channel float
// coefficients, as the CPU's contiguous float kernels compute them.
// GCC/Clang vector types: the kernels are built for baseline x86-64, where the compiler does not
// vectorise these reductions by itself (it may not reorder the sums).
using F2 = float __attribute__((vector_size(8)));
using F4 = float __attribute__((vector_size(16)));
using D2 = double __attribute__((vector_size(16)));

template <class V>
V loadVec(const float* p) {
    V v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// Two floats widened to doubles (one cvtps2pd where SSE2 is there; GCC widens a loaded pair
// element by element otherwise).
D2 widenPair(const float* p) {
#if defined(__SSE2__)
    D2 v;
    const __m128d w = _mm_cvtps_pd(_mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double*>(p))));
    std::memcpy(&v, &w, sizeof v);
    return v;
#else
    return __builtin_convertvector(loadVec<F2>(p), D2);
#endif
}

struct FloatPlanes {
    int64_t batch, plane, image;  // images, elements per channel plane, elements per image
    // The forward's sum of x (square = false) or of (x - mean)^2, in double over eight lanes.
    double stat(int64_t c, const float* x, double mean, bool square) const {
        D2 acc[4] = {};
        const D2 m = {mean, mean};
        double tail = 0;
        for (int64_t n = 0; n < batch; ++n) {
            const float* xp = x + n * image + c * plane;
            int64_t i = 0;
            for (; i + 8 <= plane; i += 8) {
                for (int k = 0; k < 4; ++k) {
                    D2 v = widenPair(xp + i + 2 * k);
                    if (square) {
                        v -= m;
                        v *= v;
                    }
                    acc[k] += v;
                }
            }
            for (; i < plane; ++i) {
                const double d = square ? xp[i] - mean : xp[i];
                tail += square ? d * d : d;
            }
        }
        const D2 s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
        return (s[0] + s[1]) + tail;
    }
    // The backward's sums of dy and dy * (x - mean), in one pass: per plane in float over eight
    // lanes (as the CPU's vectorised float reductions), the planes added in double.
    std::pair<double, double> gradSums(int64_t c, const float* g, const float* x,
                                       float mean) const {
        double sumG = 0, sumD = 0;
        const F4 m = {mean, mean, mean, mean};
        for (int64_t n = 0; n < batch; ++n) {
            const float* gp = g + n * image + c * plane;
            const float* xp = x + n * image + c * plane;
            F4 g0 = {}, g1 = {}, d0 = {}, d1 = {};
            int64_t i = 0;
            for (; i + 8 <= plane; i += 8) {
                const F4 ga = loadVec<F4>(gp + i), gb = loadVec<F4>(gp + i + 4);
                g0 += ga;
                g1 += gb;
                d0 += ga * (loadVec<F4>(xp + i) - m);
                d1 += gb * (loadVec<F4>(xp + i + 4) - m);
            }
            const F4 gs = g0 + g1, ds = d0 + d1;
            float sg = (gs[0] + gs[1]) + (gs[2] + gs[3]), sd = (ds[0] + ds[1]) + (ds[2] + ds[3]);
            for (; i < plane; ++i) {
                sg += gp[i];
                sd += gp[i] * (xp[i] - mean);
            }
            sumG += static_cast<double>(sg);
            sumD += static_cast<double>(sd);
        }
        return {sumG, sumD};
    }
    template <class F>
    void each(int64_t c, F&& f) const {
        for (int64_t n = 0; n < batch; ++n) {
            const int64_t base = n * image + c * plane;
            for (int64_t i = base; i < base + plane; ++i) f(i);
        }
    }
};

bool batchNormFloatFast(const mtiaTorchBatchNorm& p) {
    const bool forward = p.op != mtiaTorchBatchNormBackward;
    if (p.xDtype != mtiaTorchFloat32 || !contiguousNchw(p, p.xStrides)) return false;
    if (forward) return p.yDtype == mtiaTorchFloat32 && contiguousNchw(p, p.yStrides);
    if (p.gDtype != mtiaTorchFloat32 || !contiguousNchw(p, p.gStrides)) return false;
    return !p.gradInput || (p.gxDtype == mtiaTorchFloat32 && contiguousNchw(p, p.gxStrides));
}

// A channel's mean and 1/std as the kernel normalises with them.
struct ChannelStats {
    double mean, invstd;
};

// Training: from the channel's mean and sum of squared deviations m2 over count elements. The CPU
// rounds the sum of squares and the variance to the statistics' dtype, and normalises with the
// saved statistics rounded to their dtype (half or bfloat16 when the parameters are): the output
// follows them. The running statistics take the unbiased variance.
ChannelStats trainStats(const mtiaTorchBatchNorm& p, int64_t c, double mean, double m2,
                        double count) {
    m2 = roundAs(m2, p.saveDtype);
    const double var = roundAs(m2 / count, p.saveDtype);
    st(p.saveMean, c, p.saveDtype, mean);
    st(p.saveInvstd, c, p.saveDtype, 1.0 / std::sqrt(var + p.eps));
    const ChannelStats saved{ld(p.saveMean, c, p.saveDtype), ld(p.saveInvstd, c, p.saveDtype)};
    if (p.runningMean) {
        st(p.runningMean, c, p.runDtype,
           (1 - p.momentum) * ld(p.runningMean, c, p.runDtype) + p.momentum * saved.mean);
    }
    if (p.runningVar) {
        st(p.runningVar, c, p.runDtype,
           (1 - p.momentum) * ld(p.runningVar, c, p.runDtype) + p.momentum * (m2 / (count - 1)));
    }
    return saved;
}

// The statistics a backward (or an eval forward) reads: the saved ones after training, else the
// running ones.
ChannelStats storedStats(const mtiaTorchBatchNorm& p, int64_t c, bool saved) {
    if (saved) return {ld(p.saveMean, c, p.saveDtype), ld(p.saveInvstd, c, p.saveDtype)};
    return {ld(p.runningMean, c, p.runDtype),
            1.0 / std::sqrt(ld(p.runningVar, c, p.runDtype) + p.eps)};
}

void batchNormChannelFloat(const mtiaTorchBatchNorm& p, int64_t c) {
    FloatPlanes planes{p.sizes[0], 1, 0};
    for (int d = 2; d < p.ndim; ++d) planes.plane *= p.sizes[d];
    planes.image = planes.plane * p.sizes[1];
    const double count = static_cast<double>(planes.batch * planes.plane);
    const double w = param(p.weight, c, p.wDtype, 1.0);
    const auto* x = reinterpret_cast<const float*>(p.x);
    if (p.op == mtiaTorchBatchNormTrain || p.op == mtiaTorchBatchNormEval) {
        auto* y = reinterpret_cast<float*>(p.y);
        ChannelStats stats;
        if (p.op == mtiaTorchBatchNormTrain) {
            const double m = planes.stat(c, x, 0.0, false) / count;
            stats = trainStats(p, c, m, planes.stat(c, x, m, true), count);
        } else {
            stats = storedStats(p, c, false);
        }
        const double mean = stats.mean, invstd = stats.invstd;
        // y = x * alpha + beta, alpha = invstd * w, beta = b - mean * alpha.
        const auto alpha = static_cast<float>(invstd) * static_cast<float>(w);
        const float beta =
            static_cast<float>(param(p.bias, c, p.wDtype, 0.0)) - static_cast<float>(mean) * alpha;
        planes.each(c, [&](int64_t i) { y[i] = x[i] * alpha + beta; });
        return;
    }
    const auto* g = reinterpret_cast<const float*>(p.gradOut);
    const ChannelStats stats = storedStats(p, c, p.train != 0);
    const double mean = stats.mean, invstd = stats.invstd;
    const auto [sumDy, dot] = planes.gradSums(c, g, x, static_cast<float>(mean));
    if (p.gradInput) {
        auto* gx = reinterpret_cast<float*>(p.gradInput);
        const auto fi = static_cast<float>(invstd), fw = static_cast<float>(w);
        if (p.train) {
            const auto k = static_cast<float>(dot * invstd * invstd / count);
            const auto gm = static_cast<float>(sumDy / count), fm = static_cast<float>(mean);
            planes.each(c, [&](int64_t i) { gx[i] = (g[i] - gm - (x[i] - fm) * k) * fi * fw; });
        } else {
            planes.each(c, [&](int64_t i) { gx[i] = g[i] * fi * fw; });
        }
    }
    if (p.gradWeight) st(p.gradWeight, c, p.gwDtype, dot * invstd);
    if (p.gradBias) st(p.gradBias, c, p.gwDtype, sumDy);
}

void batchNormChannel(const mtiaTorchBatchNorm& p, int64_t c) {
    double count = 1;
    for (int d = 0; d < p.ndim; ++d)
        if (d != 1) count *= static_cast<double>(p.sizes[d]);
    const double w = param(p.weight, c, p.wDtype, 1.0);
    if (p.op == mtiaTorchBatchNormTrain || p.op == mtiaTorchBatchNormEval) {
        const ChannelWalk walk{p, {p.xStrides, p.yStrides, nullptr, nullptr}};
        ChannelStats stats;
        if (p.op == mtiaTorchBatchNormTrain) {
            double sum = 0;
            walk.run(c, [&](const int64_t* o) { sum += ld(p.x, o[0], p.xDtype); });
            const double m = sum / count;
            double m2 = 0;
            walk.run(c, [&](const int64_t* o) {
                const double d = ld(p.x, o[0], p.xDtype) - m;
                m2 += d * d;
            });
            stats = trainStats(p, c, m, m2, count);
        } else {
            stats = storedStats(p, c, false);
        }
        const double mean = stats.mean, invstd = stats.invstd;
        const double b = param(p.bias, c, p.wDtype, 0.0);
        walk.run(c, [&](const int64_t* o) {
            st(p.y, o[1], p.yDtype, (ld(p.x, o[0], p.xDtype) - mean) * invstd * w + b);
        });
        return;
    }
    const ChannelWalk walk{p,
                           {p.xStrides, p.gStrides, p.gradInput ? p.gxStrides : nullptr, nullptr}};
    const ChannelStats stats = storedStats(p, c, p.train != 0);
    const double mean = stats.mean, invstd = stats.invstd;
    double sumDy = 0, dot = 0;
    walk.run(c, [&](const int64_t* o) {
        const double dy = ld(p.gradOut, o[1], p.gDtype);
        sumDy += dy;
        dot += dy * (ld(p.x, o[0], p.xDtype) - mean);
    });
    if (p.gradInput) {
        if (p.train) {
            const double k = dot * invstd * invstd / count, gm = sumDy / count;
            walk.run(c, [&](const int64_t* o) {
                const double x = ld(p.x, o[0], p.xDtype), dy = ld(p.gradOut, o[1], p.gDtype);
                st(p.gradInput, o[2], p.gxDtype, (dy - gm - (x - mean) * k) * invstd * w);
            });
        } else {
            walk.run(c, [&](const int64_t* o) {
                st(p.gradInput, o[2], p.gxDtype, ld(p.gradOut, o[1], p.gDtype) * invstd * w);
            });
        }
    }
    if (p.gradWeight) st(p.gradWeight, c, p.gwDtype, dot * invstd);
    if (p.gradBias) st(p.gradBias, c, p.gwDtype, sumDy);
}

bool batchNormOperandsOk(const mtiaKernelContext* ctx, const mtiaTorchBatchNorm& p) {
    const int64_t channels[1] = {p.sizes[1]}, unit[1] = {1};
    if (!checkRange(ctx, kBatchNorm, "x", p.x, p.xDtype, p.ndim, p.sizes, p.xStrides)) return false;
    if (p.y && !checkRange(ctx, kBatchNorm, "y", p.y, p.yDtype, p.ndim, p.sizes, p.yStrides))
        return false;
    if (p.gradOut &&
        !checkRange(ctx, kBatchNorm, "gradOut", p.gradOut, p.gDtype, p.ndim, p.sizes, p.gStrides))
        return false;
    if (p.gradInput && !checkRange(ctx, kBatchNorm, "gradInput", p.gradInput, p.gxDtype, p.ndim,
                                   p.sizes, p.gxStrides))
        return false;
    struct Operand {
        const char* name;
        uint64_t data;
        int32_t dtype;
    } ops[] = {{"weight", p.weight, p.wDtype},
               {"bias", p.bias, p.wDtype},
               {"runningMean", p.runningMean, p.runDtype},
               {"runningVar", p.runningVar, p.runDtype},
               {"saveMean", p.saveMean, p.saveDtype},
               {"saveInvstd", p.saveInvstd, p.saveDtype},
               {"gradWeight", p.gradWeight, p.gwDtype},
               {"gradBias", p.gradBias, p.gwDtype}};
    for (const Operand& o : ops) {
        if (o.data && !checkRange(ctx, kBatchNorm, o.name, o.data, o.dtype, 1, channels, unit))
            return false;
    }
    return true;
}

}  // namespace

MTIA_SIM_KERNEL_ARGS(mtia_torch_layer_norm, 1, sizeof(mtiaTorchLayerNorm));

MTIA_SIM_KERNEL(mtia_torch_layer_norm) {
    mtiaTorchLayerNorm p;
    std::memcpy(&p, args[0], sizeof p);
    if (p.op < mtiaTorchLayerNormForward || p.op > mtiaTorchLayerNormBackwardParams || p.rows < 0 ||
        p.cols <= 0) {
        fault(ctx, kLayerNorm, "bad parameters");
        return;
    }
    const bool columns = p.op == mtiaTorchLayerNormBackwardParams;
    const Range r = blockRange(ctx, static_cast<uint64_t>(columns ? p.cols : p.rows));
    if (r.begin >= r.end) return;
    if (!layerNormOperandsOk(ctx, p)) return;
    if (layerNormAllOf(p, mtiaTorchFloat32)) {
        layerNormTyped<float>(p, r);
        return;
    }
    if (layerNormAllOf(p, mtiaTorchFloat64)) {
        layerNormTyped<double>(p, r);
        return;
    }
    for (uint64_t i = r.begin; i < r.end; ++i) {
        if (columns) {
            layerNormColumn(p, static_cast<int64_t>(i));
        } else {
            layerNormRow(p, static_cast<int64_t>(i));
        }
    }
}

MTIA_SIM_KERNEL_ARGS(mtia_torch_batch_norm, 1, sizeof(mtiaTorchBatchNorm));

MTIA_SIM_KERNEL(mtia_torch_batch_norm) {
    mtiaTorchBatchNorm p;
    std::memcpy(&p, args[0], sizeof p);
    if (p.op < mtiaTorchBatchNormTrain || p.op > mtiaTorchBatchNormBackward || p.ndim < 2 ||
        p.ndim > MTIA_TORCH_MAX_DIMS) {
        fault(ctx, kBatchNorm, "bad parameters");
        return;
    }
    const Range r = blockRange(ctx, static_cast<uint64_t>(p.sizes[1]));
    if (r.begin >= r.end) return;
    if (!batchNormOperandsOk(ctx, p)) return;
    const bool fast = batchNormFloatFast(p);
    for (uint64_t c = r.begin; c < r.end; ++c) {
        if (fast) {
            batchNormChannelFloat(p, static_cast<int64_t>(c));
        } else {
            batchNormChannel(p, static_cast<int64_t>(c));
        }
    }
}
