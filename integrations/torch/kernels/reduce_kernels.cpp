// Reductions, scans and softmax of the PyTorch integration, on the simulated device. The reduction
// kernel sees its input as kept dims (one output element each, split over the launch's blocks) and
// reduced dims (walked in row-major order, so that the first index of a maximum is the CPU's).
// Floating values accumulate in double (at least the CPU's accumulation type: double for float64,
// float or a cascade for float32, float for half and bfloat16), integers in int64 with wrap-around.
#include "dtype_access.h"
#include "fast_exp.h"
#include "reduce_params.h"

#include <algorithm>
#include <limits>

namespace {

using namespace mtia_kernels;

constexpr const char* kReduce = "mtia_torch_reduce";
constexpr const char* kSoftmax = "mtia_torch_softmax";

// The load of one dtype known at compile time: the switch of loadDouble/loadInt folds away.
template <int32_t D>
inline double getD(const char* p) {
    return loadDouble(p, D);
}
template <int32_t D>
inline int64_t getI(const char* p) {
    return loadInt(p, D);
}

inline int64_t wrapAdd(int64_t a, int64_t b) {
    return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
inline int64_t wrapMul(int64_t a, int64_t b) {
    return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

// f(element, k) for the elements k0 <= k < k1 of the reduced index space from base, k their
// row-major index (one division per dim to find k0, none per element).
template <class F>
inline void forReducedRange(const mtiaTorchReduce& p, const char* base, int size, uint64_t k0,
                            uint64_t k1, F&& f) {
    if (k0 >= k1) return;
    const int nd = p.redDims;
    if (nd == 0) {
        f(base, 0);
        return;
    }
    int64_t idx[MTIA_TORCH_MAX_DIMS] = {};
    const char* row = base;
    uint64_t rest = k0;
    for (int d = nd - 1; d >= 0; --d) {
        const auto n = static_cast<uint64_t>(p.redSizes[d]);
        idx[d] = static_cast<int64_t>(rest % n);
        rest /= n;
        if (d < nd - 1) row += idx[d] * p.inRedStrides[d] * size;
    }
    const int64_t innerSize = p.redSizes[nd - 1];
    const int64_t innerStride = p.inRedStrides[nd - 1] * size;
    int64_t j = idx[nd - 1];
    uint64_t k = k0;
    for (;;) {
        const char* q = row + j * innerStride;
        const int64_t stop = std::min<int64_t>(innerSize, j + static_cast<int64_t>(k1 - k));
        for (; j < stop; ++j, q += innerStride) f(q, k++);
        if (k >= k1) return;
        j = 0;
        int d = nd - 2;
        for (; d >= 0; --d) {
            row += p.inRedStrides[d] * size;
            if (++idx[d] < p.redSizes[d]) break;
            row -= p.inRedStrides[d] * size * p.redSizes[d];
            idx[d] = 0;
        }
        if (d < 0) return;
    }
}

// f(element, k) for every element of the reduced index space from base.
template <class F>
inline void forReduced(const mtiaTorchReduce& p, const char* base, int size, F&& f) {
    forReducedRange(p, base, size, 0, p.redNumel, static_cast<F&&>(f));
}

struct Offsets {
    int64_t in, out, aux;
};

Offsets keptOffsets(const mtiaTorchReduce& p, uint64_t linear) {
    Offsets o{0, 0, 0};
    for (int d = p.keptDims - 1; d >= 0; --d) {
        const auto size = static_cast<uint64_t>(p.keptSizes[d]);
        const auto i = static_cast<int64_t>(linear % size);
        linear /= size;
        o.in += i * p.inKeptStrides[d];
        o.out += i * p.outStrides[d];
        o.aux += i * p.auxStrides[d];
    }
    return o;
}

char* addr(uint64_t data, int64_t offset, int32_t dtype) {
    return reinterpret_cast<char*>(data) + offset * elementSize(dtype);
}

// Max (wantMax) or min and the first index where it is; a NaN wins and stays, as on the CPU.
template <int32_t D>
void extremum(const mtiaTorchReduce& p, const char* base, char* out, char* aux, bool wantMax) {
    const int size = elementSize(D);
    int64_t at = 0;
    if (isFloating(D)) {
        double best = 0;
        bool first = true;
        forReduced(p, base, size, [&](const char* e, uint64_t k) {
            const double v = getD<D>(e);
            if (first ||
                (!std::isnan(best) && (std::isnan(v) || (wantMax ? v > best : v < best)))) {
                best = v;
                at = static_cast<int64_t>(k);
                first = false;
            }
        });
        if (out) storeDouble(out, p.outDtype, best);
    } else {
        int64_t best = 0;
        bool first = true;
        forReduced(p, base, size, [&](const char* e, uint64_t k) {
            const int64_t v = getI<D>(e);
            if (first || (wantMax ? v > best : v < best)) {
                best = v;
                at = static_cast<int64_t>(k);
                first = false;
            }
        });
        if (out) storeInt(out, p.outDtype, best);
    }
    if (aux) storeInt(aux, p.auxDtype, at);
}

double norm(const mtiaTorchReduce& p, const char* base, int size, double (*get)(const char*)) {
    const double ord = p.scalar;
    double acc = 0;
    if (std::isinf(ord)) {
        bool first = true;
        forReduced(p, base, size, [&](const char* e, uint64_t) {
            const double v = std::fabs(get(e));
            if (first || (!std::isnan(acc) && (std::isnan(v) || (ord > 0 ? v > acc : v < acc)))) {
                acc = v;
                first = false;
            }
        });
        return acc;
    }
    if (ord == 0) {
        forReduced(p, base, size, [&](const char* e, uint64_t) { acc += get(e) != 0 ? 1.0 : 0.0; });
        return acc;
    }
    if (ord == 1) {
        forReduced(p, base, size, [&](const char* e, uint64_t) { acc += std::fabs(get(e)); });
        return acc;
    }
    if (ord == 2) {
        forReduced(p, base, size, [&](const char* e, uint64_t) {
            const double v = get(e);
            acc += v * v;
        });
        return std::sqrt(acc);
    }
    forReduced(p, base, size,
               [&](const char* e, uint64_t) { acc += std::pow(std::fabs(get(e)), ord); });
    return std::pow(acc, 1.0 / ord);
}

// Whether the reduced dims are one dense run of elements (as a mean over an image's H and W).
bool contiguousReduced(const mtiaTorchReduce& p) {
    int64_t expect = 1;
    for (int d = p.redDims - 1; d >= 0; --d) {
        if (p.redSizes[d] != 1 && p.inRedStrides[d] != expect) return false;
        expect *= p.redSizes[d];
    }
    return true;
}

// Sum of n floats in double over four partial sums (independent chains, not one long one).
double sumFloats(const float* x, uint64_t n) {
    double a[4] = {0, 0, 0, 0};
    uint64_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (int k = 0; k < 4; ++k) a[k] += x[i + k];
    for (; i < n; ++i) a[0] += x[i];
    return (a[0] + a[1]) + (a[2] + a[3]);
}

template <int32_t D>
void reduceOne(const mtiaTorchReduce& p, uint64_t o) {
    const int size = elementSize(D);
    const Offsets off = keptOffsets(p, o);
    const char* base = addr(p.in, off.in, D);
    char* out = p.out ? addr(p.out, off.out, p.outDtype) : nullptr;
    char* aux = p.aux ? addr(p.aux, off.aux, p.auxDtype) : nullptr;
    const bool floatOut = isFloating(p.outDtype);
    const auto n = static_cast<double>(p.meanCount != 0 ? p.meanCount : p.redNumel);
    switch (p.op) {
    case mtiaTorchReduceSum:
    case mtiaTorchReduceMean:
        if constexpr (D == mtiaTorchFloat32) {
            if (floatOut && contiguousReduced(p)) {
                const double acc = sumFloats(reinterpret_cast<const float*>(base), p.redNumel);
                storeDouble(out, p.outDtype, p.op == mtiaTorchReduceMean ? acc / n : acc);
                break;
            }
        }
        if (floatOut) {
            double acc = 0;
            forReduced(p, base, size, [&](const char* e, uint64_t) { acc += getD<D>(e); });
            storeDouble(out, p.outDtype, p.op == mtiaTorchReduceMean ? acc / n : acc);
        } else {
            int64_t acc = 0;
            forReduced(p, base, size,
                       [&](const char* e, uint64_t) { acc = wrapAdd(acc, getI<D>(e)); });
            storeInt(out, p.outDtype, acc);
        }
        break;
    case mtiaTorchReduceProd:
        if (floatOut) {
            double acc = 1;
            forReduced(p, base, size, [&](const char* e, uint64_t) { acc *= getD<D>(e); });
            storeDouble(out, p.outDtype, acc);
        } else {
            int64_t acc = 1;
            forReduced(p, base, size,
                       [&](const char* e, uint64_t) { acc = wrapMul(acc, getI<D>(e)); });
            storeInt(out, p.outDtype, acc);
        }
        break;
    case mtiaTorchReduceMax:
    case mtiaTorchReduceMin: extremum<D>(p, base, out, aux, p.op == mtiaTorchReduceMax); break;
    case mtiaTorchReduceVar: {
        double sum = 0;
        forReduced(p, base, size, [&](const char* e, uint64_t) { sum += getD<D>(e); });
        const double mean = sum / n;
        double m2 = 0;
        forReduced(p, base, size, [&](const char* e, uint64_t) {
            const double d = getD<D>(e) - mean;
            m2 += d * d;
        });
        const double var = m2 / std::max(0.0, n - p.scalar);
        if (out) storeDouble(out, p.outDtype, p.takeSqrt ? std::sqrt(var) : var);
        if (aux) storeDouble(aux, p.auxDtype, mean);
        break;
    }
    case mtiaTorchReduceNorm: storeDouble(out, p.outDtype, norm(p, base, size, &getD<D>)); break;
    case mtiaTorchReduceAll:
    case mtiaTorchReduceAny: {
        const bool all = p.op == mtiaTorchReduceAll;
        bool r = all;
        forReduced(p, base, size, [&](const char* e, uint64_t) {
            const bool nz = isFloating(D) ? getD<D>(e) != 0 : getI<D>(e) != 0;
            r = all ? (r && nz) : (r || nz);
        });
        storeInt(out, p.outDtype, r ? 1 : 0);
        break;
    }
    case mtiaTorchReduceLogSumExp: {
        double mx = -std::numeric_limits<double>::infinity();
        forReduced(p, base, size, [&](const char* e, uint64_t) {
            const double v = getD<D>(e);
            if (std::isnan(v) || v > mx) mx = std::isnan(mx) ? mx : v;
        });
        const double shift =
            std::isinf(mx) ? 0.0 : mx;  // as the CPU: an infinite max is not subtracted
        double acc = 0;
        forReduced(p, base, size,
                   [&](const char* e, uint64_t) { acc += std::exp(getD<D>(e) - shift); });
        storeDouble(out, p.outDtype, std::log(acc) + shift);
        break;
    }
    case mtiaTorchReduceCumSum:
    case mtiaTorchReduceCumProd: {
        const bool prod = p.op == mtiaTorchReduceCumProd;
        const int outSize = elementSize(p.outDtype);
        char* o = out;
        if (floatOut) {
            double acc = prod ? 1 : 0;
            forReduced(p, base, size, [&](const char* e, uint64_t) {
                acc = prod ? acc * getD<D>(e) : acc + getD<D>(e);
                storeDouble(o, p.outDtype, acc);
                o += p.outScanStride * outSize;
            });
        } else {
            int64_t acc = prod ? 1 : 0;
            forReduced(p, base, size, [&](const char* e, uint64_t) {
                acc = prod ? wrapMul(acc, getI<D>(e)) : wrapAdd(acc, getI<D>(e));
                storeInt(o, p.outDtype, acc);
                o += p.outScanStride * outSize;
            });
        }
        break;
    }
    default: break;
    }
}

// Sums whose outputs lie next to each other in the input (the innermost kept dim has stride 1, as
// in x.sum(0) of a matrix, a bias gradient): a tile of neighbouring outputs walks the reduced space
// once, reading rows, instead of each output walking a column.
template <int32_t D>
bool sumTiles(const mtiaTorchReduce& p, Range r) {
    const bool sum = p.op == mtiaTorchReduceSum || p.op == mtiaTorchReduceMean;
    if (!sum || !isFloating(p.outDtype) || p.keptDims == 0 || p.redDims == 0 ||
        p.inKeptStrides[p.keptDims - 1] != 1 || p.inRedStrides[p.redDims - 1] == 1)
        return false;
    constexpr uint64_t kTile = 256;
    const int size = elementSize(D), outSize = elementSize(p.outDtype);
    const auto row = static_cast<uint64_t>(p.keptSizes[p.keptDims - 1]);
    const int64_t outStep = p.outStrides[p.keptDims - 1] * outSize;
    const double scale = p.op == mtiaTorchReduceMean ? 1.0 / static_cast<double>(p.redNumel) : 1.0;
    double acc[kTile];
    for (uint64_t o = r.begin; o < r.end;) {
        const uint64_t tile = std::min({kTile, r.end - o, row - o % row});
        const Offsets off = keptOffsets(p, o);
        std::fill(acc, acc + tile, 0.0);
        forReduced(p, addr(p.in, off.in, D), size, [&](const char* e, uint64_t) {
            for (uint64_t j = 0; j < tile; ++j) acc[j] += getD<D>(e + j * size);
        });
        char* out = addr(p.out, off.out, p.outDtype);
        for (uint64_t j = 0; j < tile; ++j) {
            storeDouble(out + static_cast<int64_t>(j) * outStep, p.outDtype,
                        p.op == mtiaTorchReduceMean ? acc[j] * scale : acc[j]);
        }
        o += tile;
    }
    return true;
}

// One block's share of a single sum: its partial sum, in float64, to aux[block].
template <int32_t D>
void partialSum(const mtiaKernelContext* ctx, const mtiaTorchReduce& p) {
    const Range r = blockRange(ctx, p.redNumel);
    double acc = 0;
    forReducedRange(p, addr(p.in, 0, D), elementSize(D), r.begin, r.end,
                    [&](const char* e, uint64_t) { acc += getD<D>(e); });
    storeAs<double>(addr(p.aux, static_cast<int64_t>(blockIndex(ctx)), mtiaTorchFloat64), acc);
}

template <int32_t D>
void reduceRange(const mtiaTorchReduce& p, Range r) {
    if (sumTiles<D>(p, r)) return;
    for (uint64_t o = r.begin; o < r.end; ++o) reduceOne<D>(p, o);
}

bool reduceOperandsOk(const mtiaKernelContext* ctx, const mtiaTorchReduce& p) {
    // The input over both index spaces, the outputs over the kept one (and the scanned dim).
    int64_t sizes[2 * MTIA_TORCH_MAX_DIMS], strides[2 * MTIA_TORCH_MAX_DIMS];
    int nd = 0;
    for (int d = 0; d < p.keptDims; ++d, ++nd) {
        sizes[nd] = p.keptSizes[d];
        strides[nd] = p.inKeptStrides[d];
    }
    for (int d = 0; d < p.redDims; ++d, ++nd) {
        sizes[nd] = p.redSizes[d];
        strides[nd] = p.inRedStrides[d];
    }
    if (!checkRange(ctx, kReduce, "in", p.in, p.inDtype, nd, sizes, strides)) return false;
    const bool scan = p.op == mtiaTorchReduceCumSum || p.op == mtiaTorchReduceCumProd;
    int64_t outSizes[MTIA_TORCH_MAX_DIMS + 1], outStrides[MTIA_TORCH_MAX_DIMS + 1];
    int64_t auxStrides[MTIA_TORCH_MAX_DIMS + 1];
    for (int d = 0; d < p.keptDims; ++d) {
        outSizes[d] = p.keptSizes[d];
        outStrides[d] = p.outStrides[d];
        auxStrides[d] = p.auxStrides[d];
    }
    outSizes[p.keptDims] = scan ? static_cast<int64_t>(p.redNumel) : 1;
    outStrides[p.keptDims] = p.outScanStride;
    auxStrides[p.keptDims] = p.auxScanStride;
    if (p.out &&
        !checkRange(ctx, kReduce, "out", p.out, p.outDtype, p.keptDims + 1, outSizes, outStrides))
        return false;
    if (p.aux &&
        !checkRange(ctx, kReduce, "aux", p.aux, p.auxDtype, p.keptDims + 1, outSizes, auxStrides))
        return false;
    return true;
}

// v rounded to dtype D (half and bfloat16; exact for the others).
template <int32_t D, class Acc>
Acc roundTo(Acc v) {
    if constexpr (D == mtiaTorchFloat16 || D == mtiaTorchBFloat16) {
        char tmp[2];
        storeDouble(tmp, D, v);
        return static_cast<Acc>(loadDouble(tmp, D));
    }
    return v;
}

// Softmax over one row of dim elements, stride inner apart.
template <int32_t D, class Acc>
void softmaxRow(const mtiaTorchSoftmaxParams& p, int64_t start) {
    const int inSize = elementSize(D), outSize = elementSize(p.outDtype);
    const char* in = reinterpret_cast<const char*>(p.in) + start * inSize;
    char* out = reinterpret_cast<char*>(p.out) + start * outSize;
    const int64_t n = p.dim, is = p.inner * inSize, os = p.inner * outSize;
    if (p.op == mtiaTorchSoftmax || p.op == mtiaTorchLogSoftmax) {
        Acc mx = -std::numeric_limits<Acc>::infinity();
        for (int64_t j = 0; j < n; ++j) {
            const Acc v = static_cast<Acc>(getD<D>(in + j * is));
            if (std::isnan(v) || v > mx) mx = std::isnan(mx) ? mx : v;
        }
        Acc sum = 0;
        for (int64_t j = 0; j < n; ++j)
            sum += std::exp(static_cast<Acc>(getD<D>(in + j * is)) - mx);
        if (p.op == mtiaTorchSoftmax) {
            for (int64_t j = 0; j < n; ++j)
                storeDouble(out + j * os, p.outDtype,
                            std::exp(static_cast<Acc>(getD<D>(in + j * is)) - mx) / sum);
        } else {
            // Along the innermost dim the CPU rounds the sum and its log to the input's dtype
            // (a no-op for float32 and float64); others dims keep them in float.
            const bool rounded = p.inner == 1;
            const Acc lse =
                rounded ? roundTo<D>(std::log(roundTo<D>(sum))) : static_cast<Acc>(std::log(sum));
            for (int64_t j = 0; j < n; ++j)
                storeDouble(out + j * os, p.outDtype,
                            static_cast<Acc>(getD<D>(in + j * is)) - mx - lse);
        }
        return;
    }
    const int gSize = elementSize(p.gradDtype);
    const char* g = reinterpret_cast<const char*>(p.grad) + start * gSize;
    const int64_t gs = p.inner * gSize;
    Acc dot = 0;
    if (p.op == mtiaTorchSoftmaxBackward) {
        for (int64_t j = 0; j < n; ++j)
            dot += static_cast<Acc>(loadDouble(g + j * gs, p.gradDtype)) *
                   static_cast<Acc>(getD<D>(in + j * is));
        for (int64_t j = 0; j < n; ++j) {
            const Acc y = static_cast<Acc>(getD<D>(in + j * is));
            storeDouble(out + j * os, p.outDtype,
                        y * (static_cast<Acc>(loadDouble(g + j * gs, p.gradDtype)) - dot));
        }
    } else {
        for (int64_t j = 0; j < n; ++j)
            dot += static_cast<Acc>(loadDouble(g + j * gs, p.gradDtype));
        for (int64_t j = 0; j < n; ++j) {
            const Acc y = static_cast<Acc>(getD<D>(in + j * is));
            storeDouble(out + j * os, p.outDtype,
                        static_cast<Acc>(loadDouble(g + j * gs, p.gradDtype)) - std::exp(y) * dot);
        }
    }
}

// The fast path: rows along the innermost dim (inner 1) with input, output and gradient all float32
// or all float64. Float32 accumulates in float over four lanes (as the CPU's vectorised kernels do,
// with its float exp); float64 in double with libm's exp, as the CPU.
inline float lanesSum(Float4 v) {
    return (v[0] + v[1]) + (v[2] + v[3]);
}

inline float rowMax(const float* x, int64_t n) {
    int64_t j = 0;
    float mx = -std::numeric_limits<float>::infinity();
    if (n >= 4) {
        Float4 m = loadFloat4(x);
        for (j = 4; j + 4 <= n; j += 4) {
            const Float4 v = loadFloat4(x + j);
            // A NaN may be skipped here: its exp makes the sum, and so every output, NaN anyway.
            m = v > m ? v : m;
        }
        mx = std::max(std::max(m[0], m[1]), std::max(m[2], m[3]));
    }
    for (; j < n; ++j) mx = x[j] > mx ? x[j] : mx;
    return mx;
}

// sum over j of exp(x[j] - mx), each term also stored to e[j] when e is not null.
inline float expSum(const float* x, float mx, float* e, int64_t n) {
    Float4 acc = {};
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) {
        const Float4 v = fastExp(loadFloat4(x + j) - mx);
        if (e) storeFloat4(e + j, v);
        acc += v;
    }
    float sum = lanesSum(acc);
    for (; j < n; ++j) {
        const float v = fastExp(x[j] - mx);
        if (e) e[j] = v;
        sum += v;
    }
    return sum;
}

// sum over j of a[j] * b[j] (b null: of a[j]).
inline float dotLanes(const float* a, const float* b, int64_t n) {
    Float4 acc = {};
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) acc += b ? loadFloat4(a + j) * loadFloat4(b + j) : loadFloat4(a + j);
    float sum = lanesSum(acc);
    for (; j < n; ++j) sum += b ? a[j] * b[j] : a[j];
    return sum;
}

void softmaxRowFloat(int32_t op, const float* x, const float* g, float* y, int64_t n) {
    switch (op) {
    case mtiaTorchSoftmax: {
        const float sum = expSum(x, rowMax(x, n), y, n);
        const float inv = 1.0f / sum;
        for (int64_t j = 0; j < n; ++j) y[j] *= inv;
        break;
    }
    case mtiaTorchLogSoftmax: {
        const float mx = rowMax(x, n);
        const float lse = std::log(expSum(x, mx, nullptr, n));
        for (int64_t j = 0; j < n; ++j) y[j] = (x[j] - mx) - lse;
        break;
    }
    case mtiaTorchSoftmaxBackward: {
        const float dot = dotLanes(g, x, n);
        for (int64_t j = 0; j < n; ++j) y[j] = x[j] * (g[j] - dot);
        break;
    }
    default: {  // log_softmax's backward
        const float sum = dotLanes(g, nullptr, n);
        int64_t j = 0;
        for (; j + 4 <= n; j += 4)
            storeFloat4(y + j, loadFloat4(g + j) - fastExp(loadFloat4(x + j)) * sum);
        for (; j < n; ++j) y[j] = g[j] - fastExp(x[j]) * sum;
    }
    }
}

void softmaxRowDouble(int32_t op, const double* x, const double* g, double* y, int64_t n) {
    if (op == mtiaTorchSoftmax || op == mtiaTorchLogSoftmax) {
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < n; ++j) mx = x[j] > mx ? x[j] : mx;  // NaN: see rowMax
        double sum = 0;
        if (op == mtiaTorchSoftmax) {
            for (int64_t j = 0; j < n; ++j) {
                y[j] = std::exp(x[j] - mx);
                sum += y[j];
            }
            for (int64_t j = 0; j < n; ++j) y[j] /= sum;
        } else {
            for (int64_t j = 0; j < n; ++j) sum += std::exp(x[j] - mx);
            const double lse = std::log(sum);
            for (int64_t j = 0; j < n; ++j) y[j] = x[j] - mx - lse;
        }
        return;
    }
    double dot = 0;
    if (op == mtiaTorchSoftmaxBackward) {
        for (int64_t j = 0; j < n; ++j) dot += g[j] * x[j];
        for (int64_t j = 0; j < n; ++j) y[j] = x[j] * (g[j] - dot);
    } else {
        for (int64_t j = 0; j < n; ++j) dot += g[j];
        for (int64_t j = 0; j < n; ++j) y[j] = g[j] - std::exp(x[j]) * dot;
    }
}

// Rows [r.begin, r.end) of contiguous T rows through rowFn (softmaxRowFloat or softmaxRowDouble).
template <class T, class RowFn>
void fastRows(const mtiaTorchSoftmaxParams& p, Range r, bool backward, RowFn rowFn) {
    const auto n = p.dim;
    const auto* x = reinterpret_cast<const T*>(p.in);
    const auto* g = backward ? reinterpret_cast<const T*>(p.grad) : nullptr;
    auto* y = reinterpret_cast<T*>(p.out);
    for (uint64_t i = r.begin; i < r.end; ++i) {
        const auto o = static_cast<int64_t>(i) * n;
        rowFn(p.op, x + o, g ? g + o : nullptr, y + o, n);
    }
}

// Whether the fast path takes these parameters, and takes them for rows [r.begin, r.end).
bool softmaxFast(const mtiaTorchSoftmaxParams& p, Range r) {
    if (p.inner != 1 || p.outDtype != p.inDtype || (p.grad && p.gradDtype != p.inDtype))
        return false;
    const bool backward = p.op == mtiaTorchSoftmaxBackward || p.op == mtiaTorchLogSoftmaxBackward;
    if (p.inDtype == mtiaTorchFloat32) {
        fastRows<float>(p, r, backward, softmaxRowFloat);
        return true;
    }
    if (p.inDtype == mtiaTorchFloat64) {
        fastRows<double>(p, r, backward, softmaxRowDouble);
        return true;
    }
    return false;
}

template <int32_t D, class Acc>
void softmaxRange(const mtiaTorchSoftmaxParams& p, Range r) {
    for (uint64_t i = r.begin; i < r.end; ++i) {
        const auto row = static_cast<int64_t>(i) / p.inner, col = static_cast<int64_t>(i) % p.inner;
        softmaxRow<D, Acc>(p, row * p.dim * p.inner + col);
    }
}

}  // namespace

MTIA_SIM_KERNEL_ARGS(mtia_torch_reduce, 1, sizeof(mtiaTorchReduce));

MTIA_SIM_KERNEL(mtia_torch_reduce) {
    mtiaTorchReduce p;
    std::memcpy(&p, args[0], sizeof p);
    if (p.op < mtiaTorchReduceSum || p.op > mtiaTorchReduceCumProd) {
        fault(ctx, kReduce, "op is not a reduction");
        return;
    }
    if (p.keptDims < 0 || p.keptDims > MTIA_TORCH_MAX_DIMS || p.redDims < 0 ||
        p.redDims > MTIA_TORCH_MAX_DIMS) {
        fault(ctx, kReduce, "dims out of range");
        return;
    }
    if (p.partial) {
        const int64_t blocks[1] = {static_cast<int64_t>(blockCount(ctx))}, unit[1] = {1};
        if (p.keptNumel != 1 || (p.op != mtiaTorchReduceSum && p.op != mtiaTorchReduceMean) ||
            p.auxDtype != mtiaTorchFloat64) {
            fault(ctx, kReduce, "partial sums are for one float64 sum per block");
            return;
        }
        if (!reduceOperandsOk(ctx, p) ||
            !checkRange(ctx, kReduce, "aux", p.aux, p.auxDtype, 1, blocks, unit))
            return;
        switch (p.inDtype) {
        case mtiaTorchFloat16: partialSum<mtiaTorchFloat16>(ctx, p); break;
        case mtiaTorchBFloat16: partialSum<mtiaTorchBFloat16>(ctx, p); break;
        case mtiaTorchFloat32: partialSum<mtiaTorchFloat32>(ctx, p); break;
        case mtiaTorchFloat64: partialSum<mtiaTorchFloat64>(ctx, p); break;
        default: fault(ctx, kReduce, "partial sums are for floating inputs");
        }
        return;
    }
    const Range r = blockRange(ctx, p.keptNumel);
    if (r.begin >= r.end) return;
    if (!reduceOperandsOk(ctx, p)) return;
    switch (p.inDtype) {
    case mtiaTorchBool: reduceRange<mtiaTorchBool>(p, r); break;
    case mtiaTorchUInt8: reduceRange<mtiaTorchUInt8>(p, r); break;
    case mtiaTorchInt8: reduceRange<mtiaTorchInt8>(p, r); break;
    case mtiaTorchInt16: reduceRange<mtiaTorchInt16>(p, r); break;
    case mtiaTorchInt32: reduceRange<mtiaTorchInt32>(p, r); break;
    case mtiaTorchInt64: reduceRange<mtiaTorchInt64>(p, r); break;
    case mtiaTorchFloat16: reduceRange<mtiaTorchFloat16>(p, r); break;
    case mtiaTorchBFloat16: reduceRange<mtiaTorchBFloat16>(p, r); break;
    case mtiaTorchFloat32: reduceRange<mtiaTorchFloat32>(p, r); break;
    case mtiaTorchFloat64: reduceRange<mtiaTorchFloat64>(p, r); break;
    default: fault(ctx, kReduce, "unknown input dtype");
    }
}

MTIA_SIM_KERNEL_ARGS(mtia_torch_softmax, 1, sizeof(mtiaTorchSoftmaxParams));

MTIA_SIM_KERNEL(mtia_torch_softmax) {
    mtiaTorchSoftmaxParams p;
    std::memcpy(&p, args[0], sizeof p);
    if (p.op < mtiaTorchSoftmax || p.op > mtiaTorchLogSoftmaxBackward || p.inner <= 0 ||
        p.dim < 0 || p.outer < 0) {
        fault(ctx, kSoftmax, "bad parameters");
        return;
    }
    const uint64_t rows = static_cast<uint64_t>(p.outer) * static_cast<uint64_t>(p.inner);
    const Range r = blockRange(ctx, rows);
    if (r.begin >= r.end) return;
    const int64_t shape[1] = {p.outer * p.dim * p.inner}, unit[1] = {1};
    if (!checkRange(ctx, kSoftmax, "in", p.in, p.inDtype, 1, shape, unit) ||
        !checkRange(ctx, kSoftmax, "out", p.out, p.outDtype, 1, shape, unit) ||
        (p.grad && !checkRange(ctx, kSoftmax, "grad", p.grad, p.gradDtype, 1, shape, unit)))
        return;
    if (softmaxFast(p, r)) return;
    switch (p.inDtype) {
    case mtiaTorchFloat16: softmaxRange<mtiaTorchFloat16, float>(p, r); break;
    case mtiaTorchBFloat16: softmaxRange<mtiaTorchBFloat16, float>(p, r); break;
    case mtiaTorchFloat32: softmaxRange<mtiaTorchFloat32, float>(p, r); break;
    case mtiaTorchFloat64: softmaxRange<mtiaTorchFloat64, double>(p, r); break;
    default: fault(ctx, kSoftmax, "input dtype is not floating");
    }
}
