// Convolution on the device, forward and backward, as im2col/col2im and matrix products (OpenBLAS
// sgemm/dgemm through blas_gemm.h), for 1-, 2- and 3-d convolutions with stride, padding, dilation
// and groups. The host (csrc/ops_conv.cpp) hands in contiguous float, double or int64 tensors
// (int64 products are exact loops, not BLAS); half and bfloat16 are widened there and rounded once
// when the result is stored.
#include "blas_gemm.h"
#include "conv_params.h"
#include "dtype_access.h"

#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

// The zero runs im2col writes are a few elements each: as calls to memset (GCC's loop-to-call
// rewrite) they cost more than the stores.
#if defined(__GNUC__) && !defined(__clang__)
#define MTIA_INLINE_ZEROS __attribute__((optimize("no-tree-loop-distribute-patterns")))
#else
#define MTIA_INLINE_ZEROS
#endif

namespace {

using namespace mtia_kernels;

constexpr const char* kName = "mtia_torch_conv";

int64_t volume(const int64_t* s) {
    return s[0] * s[1] * s[2];
}

// The tap (channel, kd, kh, kw) of column-matrix row r, and the output columns ow whose input
// column iw = ow * stride + off lies inside the input: [lo, hi).
struct Tap {
    int64_t c, kd, kh, off, lo, hi;
};

Tap tapOf(const mtiaTorchConv& p, int64_t r) {
    const int64_t kvol = volume(p.kernel), khw = p.kernel[1] * p.kernel[2];
    Tap t{};
    t.c = r / kvol;
    const int64_t rest = r % kvol;
    t.kd = rest / khw;
    t.kh = (rest % khw) / p.kernel[2];
    const int64_t kw = rest % p.kernel[2];
    const int64_t s = p.stride[2], inW = p.inSize[2], outW = p.outSize[2];
    t.off = kw * p.dilation[2] - p.padding[2];
    t.lo = t.off >= 0 ? 0 : std::min<int64_t>(outW, (-t.off + s - 1) / s);
    t.hi = inW - 1 - t.off < 0 ? 0 : std::min<int64_t>(outW, (inW - 1 - t.off) / s + 1);
    t.hi = std::max(t.hi, t.lo);
    return t;
}

// Per launch: every column-matrix row's tap, and every output row's (od * stride - padding,
// oh * stride - padding), so that the loops below divide nothing.
struct Taps {
    std::vector<Tap> taps;
    std::vector<std::pair<int64_t, int64_t>> rows;
    Taps(const mtiaTorchConv& p, int64_t K) {
        // Built by walking (channel, kd, kh, kw) in row order: int64 division is slow here.
        taps.reserve(static_cast<size_t>(K));
        const Tap first = tapOf(p, 0);  // column ranges depend on kw only
        std::vector<Tap> byKw(static_cast<size_t>(p.kernel[2]), first);
        for (int64_t kw = 0; kw < p.kernel[2]; ++kw) byKw[static_cast<size_t>(kw)] = tapOf(p, kw);
        for (int64_t c = 0; static_cast<int64_t>(taps.size()) < K; ++c)
            for (int64_t kd = 0; kd < p.kernel[0]; ++kd)
                for (int64_t kh = 0; kh < p.kernel[1]; ++kh)
                    for (int64_t kw = 0; kw < p.kernel[2]; ++kw) {
                        Tap t = byKw[static_cast<size_t>(kw)];
                        t.c = c;
                        t.kd = kd;
                        t.kh = kh;
                        taps.push_back(t);
                    }
        rows.reserve(static_cast<size_t>(p.outSize[0] * p.outSize[1]));
        for (int64_t od = 0; od < p.outSize[0]; ++od)
            for (int64_t oh = 0; oh < p.outSize[1]; ++oh)
                rows.emplace_back(od * p.stride[0] - p.padding[0], oh * p.stride[1] - p.padding[1]);
    }
};

// The input row (id, ih) under tap t at output row `row` (od * outH + oh), or -1 in the padding.
int64_t inputRow(const mtiaTorchConv& p, const Taps& g, const Tap& t, int64_t row) {
    const auto& [d0, h0] = g.rows[static_cast<size_t>(row)];
    const int64_t id = d0 + t.kd * p.dilation[0], ih = h0 + t.kh * p.dilation[1];
    if (id < 0 || id >= p.inSize[0] || ih < 0 || ih >= p.inSize[1]) return -1;
    return id * p.inSize[1] + ih;
}

// One whole column-matrix row of tap t for im2col's flat case (unit strides, inW == outW, one
// depth): rows of the output whose input row is inside get the input rows shifted by t.off,
// copied as one span; the columns that shift wrapped into a neighbouring row, and the rows in the
// padding, are zeros.
template <class T>
MTIA_INLINE_ZEROS void im2colFlat(const mtiaTorchConv& p, const Tap& t, const T* plane, T* dst) {
    const int64_t outH = p.outSize[1], W = p.outSize[2];
    const int64_t shift = t.kh * p.dilation[1] - p.padding[1];  // ih = oh + shift
    const int64_t ohA = std::clamp<int64_t>(-shift, 0, outH);
    const int64_t ohB = std::clamp<int64_t>(p.inSize[1] - shift, ohA, outH);
    if (ohA == ohB || t.lo >= t.hi) {
        for (int64_t j = 0; j < outH * W; ++j) dst[j] = T(0);
        return;
    }
    for (int64_t j = 0; j < ohA * W + t.lo; ++j) dst[j] = T(0);
    const int64_t first = ohA * W + t.lo, last = (ohB - 1) * W + t.hi;
    const T* src = plane + (ohA + shift) * W + t.lo + t.off;  // inside the plane: lo + off >= 0
    for (int64_t j = 0; j < last - first; ++j) dst[first + j] = src[j];
    for (int64_t oh = ohA; oh + 1 < ohB; ++oh) {
        for (int64_t ow = t.hi; ow < W; ++ow) dst[oh * W + ow] = T(0);
        for (int64_t ow = 0; ow < t.lo; ++ow) dst[(oh + 1) * W + ow] = T(0);
    }
    for (int64_t j = last; j < outH * W; ++j) dst[j] = T(0);
}

// Rows [r0, r1) and columns [l0, l1) of one image's column matrix, into col (row-major, ld
// columns): row r = (channel, kd, kh, kw) of the group's channels, column l = output position
// (od, oh, ow); an element is the input under that kernel tap, or 0 in the padding. Walks output
// rows, so the index arithmetic is per row and the inner loop a strided copy.
template <class T>
void im2col(const mtiaTorchConv& p, const Taps& g, const T* image, int64_t r0, int64_t r1,
            int64_t l0, int64_t l1, T* col, int64_t ld) {
    const int64_t inVol = volume(p.inSize), inW = p.inSize[2], outW = p.outSize[2];
    const int64_t s = p.stride[2];
    // A 1- or 2-d convolution of unit stride whose output rows are as wide as the input's, over
    // whole rows: a tap's column-matrix row is the input plane shifted, copied as one span.
    const bool flat = l0 == 0 && l1 == volume(p.outSize) && p.outSize[0] == 1 && p.inSize[0] == 1 &&
                      p.kernel[0] == 1 && p.padding[0] == 0 && p.stride[1] == 1 && s == 1 &&
                      inW == outW;
    for (int64_t r = r0; r < r1; ++r) {
        const Tap& t = g.taps[static_cast<size_t>(r)];
        const T* plane = image + t.c * inVol;
        T* dst = col + (r - r0) * ld;
        if (flat) {
            im2colFlat(p, t, plane, dst);
            continue;
        }
        // Zeros first (the padding), then only the spans inside the input are copied.
        std::fill_n(dst, l1 - l0, T(0));
        for (int64_t l = l0, row = l0 / outW, ow0 = l0 - row * outW; l < l1; ++row, ow0 = 0) {
            const int64_t ow1 = std::min(outW, ow0 + (l1 - l));
            T* d = dst + (l - l0);  // d[ow - ow0]: column l of this output row
            const int64_t in = inputRow(p, g, t, row);
            if (in >= 0) {
                const int64_t a = std::clamp(t.lo, ow0, ow1), b = std::clamp(t.hi, a, ow1);
                const int64_t base = in * inW + t.off;  // + ow * s: never negative for ow >= lo
                if (s == 1) {
                    for (int64_t ow = a; ow < b; ++ow) d[ow - ow0] = plane[base + ow];
                } else {
                    for (int64_t ow = a; ow < b; ++ow) d[ow - ow0] = plane[base + ow * s];
                }
            }
            l += ow1 - ow0;
        }
    }
}

// v rounded to the half or bfloat16 type the CPU computes in (p.roundTo), else v.
template <class T>
T rounded(const mtiaTorchConv& p, T v) {
    if constexpr (std::is_same_v<T, float>) {
        if (p.roundTo == mtiaTorchFloat16) return halfToFloat(floatToHalf(v));
        if (p.roundTo == mtiaTorchBFloat16) return bf16ToFloat(floatToBf16(v));
    }
    return v;
}

// Adds every element of one image's column matrix (all rows, all columns) back to the input
// position it was taken from.
template <class T>
void col2im(const mtiaTorchConv& p, const Taps& g, const T* col, T* image, int64_t rows) {
    const int64_t inVol = volume(p.inSize), inW = p.inSize[2], outW = p.outSize[2];
    const int64_t L = volume(p.outSize), outRows = L / outW, s = p.stride[2];
    for (int64_t r = 0; r < rows; ++r) {
        const Tap& t = g.taps[static_cast<size_t>(r)];
        T* plane = image + t.c * inVol;
        const T* src = col + r * L;
        for (int64_t row = 0; row < outRows; ++row) {
            const int64_t in = inputRow(p, g, t, row);
            if (in < 0) continue;
            const int64_t base = in * inW + t.off;
            const T* srow = src + row * outW;
            if (p.roundTo != 0) {
                for (int64_t ow = t.lo; ow < t.hi; ++ow)
                    plane[base + ow * s] = rounded(p, plane[base + ow * s] + srow[ow]);
            } else if (s == 1) {
                for (int64_t ow = t.lo; ow < t.hi; ++ow) plane[base + ow] += srow[ow];
            } else {
                for (int64_t ow = t.lo; ow < t.hi; ++ow) plane[base + ow * s] += srow[ow];
            }
        }
    }
}

// Whether the column matrix is the image itself (1x1 kernel, stride 1, no padding).
bool identityColumns(const mtiaTorchConv& p) {
    for (int d = 0; d < 3; ++d)
        if (p.kernel[d] != 1 || p.stride[d] != 1 || p.padding[d] != 0) return false;
    return true;
}

template <class T>
void run(const mtiaKernelContext* ctx, const mtiaTorchConv& p) {
    const int64_t cg = p.inChannels / p.groups, og = p.outChannels / p.groups;
    const int64_t kvol = volume(p.kernel), L = volume(p.outSize), inVol = volume(p.inSize);
    const int64_t K = cg * kvol;  // rows of the column matrix
    const auto* input = reinterpret_cast<T*>(p.input);
    auto* weight = reinterpret_cast<T*>(p.weight);
    auto* bias = reinterpret_cast<T*>(p.bias);
    auto* output = reinterpret_cast<T*>(p.output);
    const bool identity = identityColumns(p);
    std::vector<T> col;
    std::optional<Taps> taps;
    if (!identity && p.op != mtiaTorchConvGradBias) taps.emplace(p, K);
    switch (p.op) {
    case mtiaTorchConvForward: {
        const int64_t per = (L + p.chunks - 1) / p.chunks;
        const Range items = blockRange(ctx, static_cast<uint64_t>(p.batch * p.groups * p.chunks));
        for (uint64_t it = items.begin; it < items.end; ++it) {
            const auto chunk = static_cast<int64_t>(it % static_cast<uint64_t>(p.chunks));
            const auto ng = static_cast<int64_t>(it / static_cast<uint64_t>(p.chunks));
            const int64_t n = ng / p.groups, g = ng % p.groups;
            const int64_t l0 = std::min(L, chunk * per), l1 = std::min(L, l0 + per);
            if (l0 >= l1) continue;
            const T* image = input + (n * p.inChannels + g * cg) * inVol;
            T* out = output + (n * p.outChannels + g * og) * L + l0;
            const T* cols = image + l0;
            int64_t ldCol = L;
            if (!identity) {
                col.resize(static_cast<size_t>(K * (l1 - l0)));
                im2col(p, *taps, image, 0, K, l0, l1, col.data(), l1 - l0);
                cols = col.data();
                ldCol = l1 - l0;
            }
            T beta = 0;
            if (bias != nullptr) {
                for (int64_t o = 0; o < og; ++o)
                    for (int64_t l = 0; l < l1 - l0; ++l) out[o * L + l] = bias[g * og + o];
                beta = 1;
            }
            gemm<T>(1, {weight + g * og * K, og, K, K, 1}, {cols, K, l1 - l0, ldCol, 1}, beta,
                    {out, og, l1 - l0, L, 1});
        }
        break;
    }
    case mtiaTorchConvGradInput: {
        // output holds the gradient of the output, input receives the gradient of the input.
        const Range items = blockRange(ctx, static_cast<uint64_t>(p.batch * p.groups));
        auto* gradIn = reinterpret_cast<T*>(p.input);
        for (uint64_t it = items.begin; it < items.end; ++it) {
            const auto n = static_cast<int64_t>(it) / p.groups;
            const auto g = static_cast<int64_t>(it) % p.groups;
            T* image = gradIn + (n * p.inChannels + g * cg) * inVol;
            const T* grad = output + (n * p.outChannels + g * og) * L;
            const MatView<const T> wT =
                MatView<const T>{weight + g * og * K, og, K, K, 1}.transposed();
            if (identity) {
                gemm<T>(1, wT, {grad, og, L, L, 1}, 0, {image, K, L, L, 1});
                if (p.roundTo != 0)
                    for (int64_t i = 0; i < K * L; ++i) image[i] = rounded(p, image[i]);
            } else {
                col.resize(static_cast<size_t>(K * L));
                gemm<T>(1, wT, {grad, og, L, L, 1}, 0, {col.data(), K, L, L, 1});
                if (p.roundTo != 0)
                    for (T& v : col) v = rounded(p, v);
                for (int64_t i = 0; i < cg * inVol; ++i) image[i] = 0;
                col2im(p, *taps, col.data(), image, K);
            }
            // A transposed convolution's forward is this computation, plus its bias.
            if (bias != nullptr)
                for (int64_t c = 0; c < cg; ++c)
                    for (int64_t i = 0; i < inVol; ++i)
                        image[c * inVol + i] = rounded(p, image[c * inVol + i] + bias[g * cg + c]);
        }
        break;
    }
    case mtiaTorchConvGradWeight: {
        // weight receives sum over n of grad[n, g] @ columns[n, g]^T; chunks split its columns.
        const int64_t per = (K + p.chunks - 1) / p.chunks;
        const Range items = blockRange(ctx, static_cast<uint64_t>(p.groups * p.chunks));
        for (uint64_t it = items.begin; it < items.end; ++it) {
            const auto g = static_cast<int64_t>(it) / p.chunks;
            const auto chunk = static_cast<int64_t>(it) % p.chunks;
            const int64_t r0 = std::min(K, chunk * per), r1 = std::min(K, r0 + per);
            if (r0 >= r1) continue;
            const MatView<T> gw{weight + g * og * K + r0, og, r1 - r0, K, 1};
            for (int64_t n = 0; n < p.batch; ++n) {
                const T* image = input + (n * p.inChannels + g * cg) * inVol;
                const T* grad = output + (n * p.outChannels + g * og) * L;
                const T* cols = image + r0 * L;
                if (!identity) {
                    col.resize(static_cast<size_t>((r1 - r0) * L));
                    im2col(p, *taps, image, r0, r1, 0, L, col.data(), L);
                    cols = col.data();
                }
                const MatView<const T> colT = MatView<const T>{cols, r1 - r0, L, L, 1}.transposed();
                gemm<T>(1, {grad, og, L, L, 1}, colT, n == 0 ? T(0) : T(1), gw);
            }
            if (p.batch == 0)
                for (int64_t o = 0; o < og; ++o)
                    for (int64_t r = r0; r < r1; ++r) weight[(g * og + o) * K + r] = 0;
        }
        break;
    }
    case mtiaTorchConvGradBias: {
        const Range items = blockRange(ctx, static_cast<uint64_t>(p.outChannels));
        for (uint64_t o = items.begin; o < items.end; ++o) {
            // Eight partial sums (the CPU's vectorised sum splits its accumulation too).
            T part[8] = {};
            for (int64_t n = 0; n < p.batch; ++n) {
                const T* grad = output + (n * p.outChannels + static_cast<int64_t>(o)) * L;
                int64_t l = 0;
                for (; l + 8 <= L; l += 8)
                    for (int k = 0; k < 8; ++k) part[k] += grad[l + k];
                for (; l < L; ++l) part[0] += grad[l];
            }
            bias[o] = ((part[0] + part[1]) + (part[2] + part[3])) +
                      ((part[4] + part[5]) + (part[6] + part[7]));
        }
        break;
    }
    default: fault(ctx, kName, "unknown op");
    }
}

bool checkTensor(const mtiaKernelContext* ctx, const mtiaTorchConv& p, uint64_t data,
                 const char* name, int64_t elements) {
    const int64_t strides[1] = {1};
    return checkRange(ctx, kName, name, data, p.dtype, 1, &elements, strides);
}

}  // namespace

MTIA_SIM_KERNEL_ARGS(mtia_torch_conv, 1, sizeof(mtiaTorchConv));

MTIA_SIM_KERNEL(mtia_torch_conv) {
    mtiaTorchConv p;
    std::memcpy(&p, args[0], sizeof p);
    if (p.dtype != mtiaTorchFloat32 && p.dtype != mtiaTorchFloat64 && p.dtype != mtiaTorchInt64) {
        fault(ctx, kName, "dtype must be float32, float64 or int64");
        return;
    }
    if (p.groups <= 0 || p.chunks <= 0 || p.inChannels % p.groups != 0 ||
        p.outChannels % p.groups != 0 || p.batch < 0) {
        fault(ctx, kName, "bad channel or group counts");
        return;
    }
    for (int d = 0; d < 3; ++d) {
        if (p.kernel[d] <= 0 || p.stride[d] <= 0 || p.dilation[d] <= 0 || p.outSize[d] <= 0 ||
            p.inSize[d] <= 0 || p.padding[d] < 0) {
            fault(ctx, kName, "bad geometry");
            return;
        }
    }
    const int64_t in = p.batch * p.inChannels * volume(p.inSize);
    const int64_t out = p.batch * p.outChannels * volume(p.outSize);
    const int64_t w = p.outChannels * (p.inChannels / p.groups) * volume(p.kernel);
    if ((p.op != mtiaTorchConvGradBias && !checkTensor(ctx, p, p.input, "input", in)) ||
        !checkTensor(ctx, p, p.output, "output", out) ||
        (p.op != mtiaTorchConvGradBias && !checkTensor(ctx, p, p.weight, "weight", w)) ||
        ((p.op == mtiaTorchConvGradBias || p.bias != 0) &&
         !checkTensor(ctx, p, p.bias, "bias", p.outChannels)))
        return;
    switch (p.dtype) {
    case mtiaTorchFloat32: run<float>(ctx, p); break;
    case mtiaTorchFloat64: run<double>(ctx, p); break;
    default: run<int64_t>(ctx, p); break;  // exact, as the CPU's slow int64 convolution
    }
}
