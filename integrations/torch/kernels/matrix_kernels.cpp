// Matrix products on the device: one batched kernel, out[b] = beta * self[b] + alpha * a[b] @ b[b],
// behind mm, bmm, addmm, baddbmm, addmv, mv, dot and matmul. float32 and float64 run OpenBLAS's
// sgemm/dgemm on the operands in place (transposes and leading dimensions from their strides);
// float16 and bfloat16 are widened to float, multiplied with sgemm and rounded once at the store
// (beta * self + alpha * product in float, as the CPU's addmm); integers accumulate exactly in
// int64 (wrapping, as the CPU). The launch's blocks split the rows (or columns: splitCols) of all
// batches' outputs between them; tileM/tileN/tileK cut a block's share further (matrix_params.h),
// the configurations torch_mtia.gemm_tuning chooses between.
#include "blas_gemm.h"
#include "dtype_access.h"
#include "matrix_params.h"

#include <memory>
#include <type_traits>
#include <vector>

namespace {

using namespace mtia_kernels;

constexpr const char* kName = "mtia_torch_gemm";

template <class T>
T* elementPtr(const mtiaTorchMatrixArg& m, int64_t batch, int64_t row, int64_t col = 0) {
    return reinterpret_cast<T*>(m.data) + batch * m.batchStride + row * m.rowStride +
           col * m.colStride;
}

bool checkOperand(const mtiaKernelContext* ctx, const mtiaTorchGemm& p, const mtiaTorchMatrixArg& a,
                  const char* name, int64_t rows, int64_t cols) {
    const int64_t sizes[3] = {p.batch, rows, cols};
    const int64_t strides[3] = {a.batchStride, a.rowStride, a.colStride};
    return checkRange(ctx, kName, name, a.data, p.dtype, 3, sizes, strides);
}

// A block's share of the outputs: rows [i0, i1) and columns [j0, j1) of batch b.
struct Share {
    int64_t b, i0, i1, j0, j1;
};

// A tile size: t when positive, else all of n (at least 1, so that loops over it advance).
int64_t tileOr(int32_t t, int64_t n) {
    return t > 0 ? t : std::max<int64_t>(n, 1);
}

// A share for float and double: self (scaled) goes into out first unless out already holds it,
// then BLAS accumulates the product onto it, one call per tile (k panels onto the earlier ones).
template <class T>
void shareBlas(const mtiaTorchGemm& p, const Share& s) {
    const auto alpha = static_cast<T>(p.alpha);
    T beta = 0;
    T* c0 = elementPtr<T>(p.out, s.b, s.i0, s.j0);
    if (p.useSelf != 0) {
        beta = static_cast<T>(p.beta);
        if (p.selfIsOut == 0) {
            for (int64_t i = 0; i < s.i1 - s.i0; ++i) {
                const T* srow = elementPtr<const T>(p.self, s.b, s.i0 + i, s.j0);
                T* crow = c0 + i * p.out.rowStride;
                if (p.out.colStride == 1 && p.self.colStride == 1) {
                    for (int64_t j = 0; j < s.j1 - s.j0; ++j) crow[j] = srow[j];
                } else {
                    for (int64_t j = 0; j < s.j1 - s.j0; ++j)
                        crow[j * p.out.colStride] = srow[j * p.self.colStride];
                }
            }
        }
    }
    const int64_t tm = tileOr(p.tileM, s.i1 - s.i0), tn = tileOr(p.tileN, s.j1 - s.j0);
    const int64_t tk = tileOr(p.tileK, p.k);
    for (int64_t i = s.i0; i < s.i1; i += tm) {
        const int64_t rows = std::min(tm, s.i1 - i);
        for (int64_t j = s.j0; j < s.j1; j += tn) {
            const int64_t cols = std::min(tn, s.j1 - j);
            const MatView<T> c{elementPtr<T>(p.out, s.b, i, j), rows, cols, p.out.rowStride,
                               p.out.colStride};
            // k == 0 still makes one call: it scales c by beta.
            for (int64_t kk = 0; kk == 0 || kk < p.k; kk += tk) {
                const int64_t depth = std::min(tk, p.k - kk);
                const MatView<const T> a{elementPtr<const T>(p.a, s.b, i, kk), rows, depth,
                                         p.a.rowStride, p.a.colStride};
                const MatView<const T> bm{elementPtr<const T>(p.b, s.b, kk, j), depth, cols,
                                          p.b.rowStride, p.b.colStride};
                gemm<T>(alpha, a, bm, kk == 0 ? beta : T(1), c);
            }
        }
    }
}

float loadReduced(const uint16_t* p, bool half) {
    return half ? halfToFloat(*p) : bf16ToFloat(*p);
}

// n elements from src (stride elements apart) widened to float; one loop per type, so that the
// contiguous bfloat16 case is a plain shift the compiler vectorises.
void widen(const uint16_t* src, int64_t stride, float* dst, int64_t n, bool half) {
    if (half) {
        for (int64_t j = 0; j < n; ++j) dst[j] = halfToFloat(src[j * stride]);
    } else if (stride == 1) {
        for (int64_t j = 0; j < n; ++j) dst[j] = bf16ToFloat(src[j]);
    } else {
        for (int64_t j = 0; j < n; ++j) dst[j] = bf16ToFloat(src[j * stride]);
    }
}

// rows x cols of a float16/bfloat16 operand from (row, col) of batch b, widened into dst
// (row-major, cols wide).
void widenPanel(const mtiaTorchMatrixArg& m, bool half, int64_t b, int64_t row, int64_t col,
                int64_t rows, int64_t cols, float* dst) {
    for (int64_t i = 0; i < rows; ++i)
        widen(elementPtr<const uint16_t>(m, b, row + i, col), m.colStride, dst + i * cols, cols,
              half);
}

// A share for float16/bfloat16: the product accumulated in a float buffer from panels of the
// operands widened to float (depth tileK of this share's rows of a and of a tileN column panel of
// b at a time; by default all of them at once), then one rounding at the store.
void shareReduced(const mtiaTorchGemm& p, const Share& s, std::vector<float>& buffer) {
    const bool half = p.dtype == mtiaTorchFloat16;
    const int64_t rows = s.i1 - s.i0, cols = s.j1 - s.j0;
    const int64_t tm = tileOr(p.tileM, rows), tn = std::min(tileOr(p.tileN, cols), cols);
    const int64_t tk = std::min(tileOr(p.tileK, p.k), p.k);
    buffer.resize(static_cast<size_t>(rows * tk + tk * tn + rows * cols));
    float* a = buffer.data();
    float* bm = a + rows * tk;
    float* c = bm + tk * tn;
    if (p.k == 0) std::fill(c, c + rows * cols, 0.0f);
    for (int64_t kk = 0; kk < p.k; kk += tk) {
        const int64_t depth = std::min(tk, p.k - kk);
        widenPanel(p.a, half, s.b, s.i0, kk, rows, depth, a);
        for (int64_t j = 0; j < cols; j += tn) {
            const int64_t width = std::min(tn, cols - j);
            widenPanel(p.b, half, s.b, kk, s.j0 + j, depth, width, bm);
            for (int64_t i = 0; i < rows; i += tm) {
                const int64_t height = std::min(tm, rows - i);
                gemm<float>(1.0f, {a + i * depth, height, depth, depth, 1},
                            {bm, depth, width, width, 1}, kk == 0 ? 0.0f : 1.0f,
                            {c + i * cols + j, height, width, cols, 1});
            }
        }
    }
    const auto alpha = static_cast<float>(p.alpha);
    const auto beta = static_cast<float>(p.beta);
    for (int64_t i = 0; i < rows; ++i) {
        uint16_t* dst = elementPtr<uint16_t>(p.out, s.b, s.i0 + i, s.j0);
        const uint16_t* self =
            p.useSelf != 0 ? elementPtr<const uint16_t>(p.self, s.b, s.i0 + i, s.j0) : nullptr;
        const float* crow = c + i * cols;
        for (int64_t j = 0; j < cols; ++j) {
            float v = alpha * crow[j];
            if (self != nullptr) v = beta * loadReduced(self + j * p.self.colStride, half) + v;
            dst[j * p.out.colStride] = half ? floatToHalf(v) : floatToBf16(v);
        }
    }
}

template <class T>
T loadElement(const void* p, int32_t dtype) {
    if constexpr (std::is_same_v<T, double>) {
        return loadDouble(p, dtype);
    } else {
        return loadFloat(p, dtype);
    }
}

// A share summed in order of k in the compute type T (float, or double for float64), as the CPU's
// bmm does for small matrices.
template <class T>
void shareSequential(const mtiaTorchGemm& p, const Share& s) {
    const int size = elementSize(p.dtype);
    const auto* A = reinterpret_cast<const char*>(p.a.data);
    const auto* B = reinterpret_cast<const char*>(p.b.data);
    const auto* S = reinterpret_cast<const char*>(p.self.data);
    auto* O = reinterpret_cast<char*>(p.out.data);
    const auto alpha = static_cast<T>(p.alpha);
    const auto beta = static_cast<T>(p.beta);
    const int64_t b = s.b;
    for (int64_t i = s.i0; i < s.i1; ++i) {
        for (int64_t j = s.j0; j < s.j1; ++j) {
            T acc = 0;
            for (int64_t kk = 0; kk < p.k; ++kk) {
                const T x = loadElement<T>(
                    A + (b * p.a.batchStride + i * p.a.rowStride + kk * p.a.colStride) * size,
                    p.dtype);
                const T y = loadElement<T>(
                    B + (b * p.b.batchStride + kk * p.b.rowStride + j * p.b.colStride) * size,
                    p.dtype);
                acc += x * y;
            }
            T v = alpha * acc;
            if (p.useSelf != 0) {
                const T sv = loadElement<T>(
                    S + (b * p.self.batchStride + i * p.self.rowStride + j * p.self.colStride) *
                            size,
                    p.dtype);
                v = sv * beta + alpha * acc;
            }
            storeDouble(O + (b * p.out.batchStride + i * p.out.rowStride + j * p.out.colStride) *
                                size,
                        p.dtype, v);
        }
    }
}

int64_t wrapMul(int64_t a, int64_t b) {
    return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
int64_t wrapAdd(int64_t a, int64_t b) {
    return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

// A share for the integer dtypes: exact, wrapping int64 accumulation.
void shareInteger(const mtiaTorchGemm& p, const Share& s, std::vector<int64_t>& acc) {
    const int size = elementSize(p.dtype);
    const auto* A = reinterpret_cast<const char*>(p.a.data);
    const auto* B = reinterpret_cast<const char*>(p.b.data);
    const auto* S = reinterpret_cast<const char*>(p.self.data);
    auto* O = reinterpret_cast<char*>(p.out.data);
    const int64_t b = s.b, cols = s.j1 - s.j0;
    acc.resize(static_cast<size_t>(cols));
    for (int64_t i = s.i0; i < s.i1; ++i) {
        std::fill(acc.begin(), acc.end(), 0);
        for (int64_t kk = 0; kk < p.k; ++kk) {
            const int64_t aik = loadInt(
                A + (b * p.a.batchStride + i * p.a.rowStride + kk * p.a.colStride) * size, p.dtype);
            const char* brow = B + (b * p.b.batchStride + kk * p.b.rowStride) * size;
            for (int64_t j = 0; j < cols; ++j)
                acc[j] = wrapAdd(
                    acc[j],
                    wrapMul(aik, loadInt(brow + (s.j0 + j) * p.b.colStride * size, p.dtype)));
        }
        for (int64_t j = 0; j < cols; ++j) {
            const int64_t jj = s.j0 + j;
            int64_t v = wrapMul(p.ialpha, acc[j]);
            if (p.useSelf != 0) {
                const int64_t sv = loadInt(
                    S + (b * p.self.batchStride + i * p.self.rowStride + jj * p.self.colStride) *
                            size,
                    p.dtype);
                v = wrapAdd(wrapMul(p.ibeta, sv), v);
            }
            storeInt(O + (b * p.out.batchStride + i * p.out.rowStride + jj * p.out.colStride) *
                             size,
                     p.dtype, v);
        }
    }
}

void runShare(const mtiaTorchGemm& p, const Share& s, std::vector<float>& floats,
              std::vector<int64_t>& ints) {
    if (p.sequential != 0 && isFloating(p.dtype)) {
        if (p.dtype == mtiaTorchFloat64) {
            shareSequential<double>(p, s);
        } else {
            shareSequential<float>(p, s);
        }
        return;
    }
    switch (p.dtype) {
    case mtiaTorchFloat32: shareBlas<float>(p, s); break;
    case mtiaTorchFloat64: shareBlas<double>(p, s); break;
    case mtiaTorchFloat16:
    case mtiaTorchBFloat16: shareReduced(p, s, floats); break;
    default: shareInteger(p, s, ints); break;
    }
}

}  // namespace

MTIA_SIM_KERNEL_ARGS(mtia_torch_gemm, 1, sizeof(mtiaTorchGemm));

MTIA_SIM_KERNEL(mtia_torch_gemm) {
    mtiaTorchGemm p;
    std::memcpy(&p, args[0], sizeof p);
    if (p.batch < 0 || p.m < 0 || p.n < 0 || p.k < 0) {
        fault(ctx, kName, "negative size");
        return;
    }
    if (p.dtype == mtiaTorchBool || elementSize(p.dtype) == 0) {
        fault(ctx, kName, "unsupported dtype");
        return;
    }
    // The launch's blocks split all batches' rows (or, with splitCols, columns) between them.
    const int64_t across = p.splitCols != 0 ? p.n : p.m;
    const Range units =
        blockRange(ctx, static_cast<uint64_t>(p.batch) * static_cast<uint64_t>(across));
    if (units.begin >= units.end || p.n == 0 || p.m == 0) return;
    if (!checkOperand(ctx, p, p.a, "a", p.m, p.k) || !checkOperand(ctx, p, p.b, "b", p.k, p.n) ||
        !checkOperand(ctx, p, p.out, "out", p.m, p.n) ||
        (p.useSelf != 0 && !checkOperand(ctx, p, p.self, "self", p.m, p.n)))
        return;
    if (p.tileM < 0 || p.tileN < 0 || p.tileK < 0) {
        fault(ctx, kName, "negative tile");
        return;
    }
    std::vector<float> floats;
    std::vector<int64_t> ints;
    // This block's rows or columns, one batch at a time.
    for (uint64_t r = units.begin; r < units.end;) {
        const auto b = static_cast<int64_t>(r / static_cast<uint64_t>(across));
        const auto x0 = static_cast<int64_t>(r % static_cast<uint64_t>(across));
        const int64_t x1 = std::min<int64_t>(across, x0 + static_cast<int64_t>(units.end - r));
        const Share s = p.splitCols != 0 ? Share{b, 0, p.m, x0, x1} : Share{b, x0, x1, 0, p.n};
        runShare(p, s, floats, ints);
        r += static_cast<uint64_t>(x1 - x0);
    }
}
