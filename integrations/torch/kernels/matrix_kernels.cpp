// Matrix products on the device: one batched kernel, out[b] = beta * self[b] + alpha * a[b] @ b[b],
// behind mm, bmm, addmm, baddbmm, addmv, mv, dot and matmul. float32 and float64 run OpenBLAS's
// sgemm/dgemm on the operands in place (transposes and leading dimensions from their strides);
// float16 and bfloat16 are widened to float, multiplied with sgemm and rounded once at the store
// (beta * self + alpha * product in float, as the CPU's addmm); integers accumulate exactly in
// int64 (wrapping, as the CPU). The launch's blocks split the rows of all batches' outputs between
// them.
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
T* elementPtr(const mtiaTorchMatrixArg& m, int64_t batch, int64_t row) {
    return reinterpret_cast<T*>(m.data) + batch * m.batchStride + row * m.rowStride;
}

bool checkOperand(const mtiaKernelContext* ctx, const mtiaTorchGemm& p, const mtiaTorchMatrixArg& a,
                  const char* name, int64_t rows, int64_t cols) {
    const int64_t sizes[3] = {p.batch, rows, cols};
    const int64_t strides[3] = {a.batchStride, a.rowStride, a.colStride};
    return checkRange(ctx, kName, name, a.data, p.dtype, 3, sizes, strides);
}

// Rows [i0, i1) of batch b for float and double: self (scaled) goes into out first unless out
// already holds it, then BLAS accumulates the product onto it.
template <class T>
void rowsBlas(const mtiaTorchGemm& p, int64_t b, int64_t i0, int64_t i1) {
    const auto alpha = static_cast<T>(p.alpha);
    T beta = 0;
    const MatView<T> c{elementPtr<T>(p.out, b, i0), i1 - i0, p.n, p.out.rowStride, p.out.colStride};
    if (p.useSelf != 0) {
        beta = static_cast<T>(p.beta);
        if (p.selfIsOut == 0) {
            const T* s = elementPtr<T>(p.self, b, i0);
            const auto pb = static_cast<T>(p.beta);
            for (int64_t i = 0; i < c.rows; ++i) {
                const T* srow = s + i * p.self.rowStride;
                T* crow = c.data + i * c.rs;
                if (c.cs == 1 && p.self.colStride == 1) {
                    for (int64_t j = 0; j < c.cols; ++j) crow[j] = srow[j];
                } else {
                    for (int64_t j = 0; j < c.cols; ++j)
                        crow[j * c.cs] = srow[j * p.self.colStride];
                }
            }
            beta = pb;
        }
    }
    const MatView<const T> a{elementPtr<const T>(p.a, b, i0), i1 - i0, p.k, p.a.rowStride,
                             p.a.colStride};
    const MatView<const T> bm{elementPtr<const T>(p.b, b, 0), p.k, p.n, p.b.rowStride,
                              p.b.colStride};
    gemm<T>(alpha, a, bm, beta, c);
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

// Rows [i0, i1) of batch b for float16/bfloat16: the operands widened into float buffers (this
// block's rows of a, all of b), the product in float, one rounding at the store.
void rowsReduced(const mtiaTorchGemm& p, int64_t b, int64_t i0, int64_t i1,
                 std::vector<float>& buffer) {
    const bool half = p.dtype == mtiaTorchFloat16;
    const int64_t rows = i1 - i0;
    buffer.resize(static_cast<size_t>(rows * p.k + p.k * p.n + rows * p.n));
    float* a = buffer.data();
    float* bm = a + rows * p.k;
    float* c = bm + p.k * p.n;
    for (int64_t i = 0; i < rows; ++i)
        widen(elementPtr<const uint16_t>(p.a, b, i0 + i), p.a.colStride, a + i * p.k, p.k, half);
    for (int64_t kk = 0; kk < p.k; ++kk)
        widen(elementPtr<const uint16_t>(p.b, b, kk), p.b.colStride, bm + kk * p.n, p.n, half);
    gemm<float>(1.0f, {a, rows, p.k, p.k, 1}, {bm, p.k, p.n, p.n, 1}, 0.0f, {c, rows, p.n, p.n, 1});
    const auto alpha = static_cast<float>(p.alpha);
    const auto beta = static_cast<float>(p.beta);
    for (int64_t i = 0; i < rows; ++i) {
        uint16_t* dst = elementPtr<uint16_t>(p.out, b, i0 + i);
        const uint16_t* s = elementPtr<const uint16_t>(p.self, b, i0 + i);
        const float* crow = c + i * p.n;
        for (int64_t j = 0; j < p.n; ++j) {
            float v = alpha * crow[j];
            if (p.useSelf != 0) v = beta * loadReduced(s + j * p.self.colStride, half) + v;
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

// Rows [i0, i1) of batch b summed in order of k in the compute type T (float, or double for
// float64), as the CPU's bmm does for small matrices.
template <class T>
void rowsSequential(const mtiaTorchGemm& p, int64_t b, int64_t i0, int64_t i1) {
    const int size = elementSize(p.dtype);
    const auto* A = reinterpret_cast<const char*>(p.a.data);
    const auto* B = reinterpret_cast<const char*>(p.b.data);
    const auto* S = reinterpret_cast<const char*>(p.self.data);
    auto* O = reinterpret_cast<char*>(p.out.data);
    const auto alpha = static_cast<T>(p.alpha);
    const auto beta = static_cast<T>(p.beta);
    for (int64_t i = i0; i < i1; ++i) {
        for (int64_t j = 0; j < p.n; ++j) {
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
                const T s = loadElement<T>(
                    S + (b * p.self.batchStride + i * p.self.rowStride + j * p.self.colStride) *
                            size,
                    p.dtype);
                v = s * beta + alpha * acc;
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

// Rows [i0, i1) of batch b for the integer dtypes: exact, wrapping int64 accumulation.
void rowsInteger(const mtiaTorchGemm& p, int64_t b, int64_t i0, int64_t i1,
                 std::vector<int64_t>& acc) {
    const int size = elementSize(p.dtype);
    const auto* A = reinterpret_cast<const char*>(p.a.data);
    const auto* B = reinterpret_cast<const char*>(p.b.data);
    const auto* S = reinterpret_cast<const char*>(p.self.data);
    auto* O = reinterpret_cast<char*>(p.out.data);
    acc.resize(static_cast<size_t>(p.n));
    for (int64_t i = i0; i < i1; ++i) {
        std::fill(acc.begin(), acc.end(), 0);
        for (int64_t kk = 0; kk < p.k; ++kk) {
            const int64_t aik = loadInt(
                A + (b * p.a.batchStride + i * p.a.rowStride + kk * p.a.colStride) * size, p.dtype);
            const char* brow = B + (b * p.b.batchStride + kk * p.b.rowStride) * size;
            for (int64_t j = 0; j < p.n; ++j)
                acc[j] = wrapAdd(acc[j],
                                 wrapMul(aik, loadInt(brow + j * p.b.colStride * size, p.dtype)));
        }
        for (int64_t j = 0; j < p.n; ++j) {
            int64_t v = wrapMul(p.ialpha, acc[j]);
            if (p.useSelf != 0) {
                const int64_t s = loadInt(
                    S + (b * p.self.batchStride + i * p.self.rowStride + j * p.self.colStride) *
                            size,
                    p.dtype);
                v = wrapAdd(wrapMul(p.ibeta, s), v);
            }
            storeInt(O + (b * p.out.batchStride + i * p.out.rowStride + j * p.out.colStride) * size,
                     p.dtype, v);
        }
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
    const Range rows = blockRange(ctx, static_cast<uint64_t>(p.batch) * static_cast<uint64_t>(p.m));
    if (rows.begin >= rows.end || p.n == 0) return;
    if (!checkOperand(ctx, p, p.a, "a", p.m, p.k) || !checkOperand(ctx, p, p.b, "b", p.k, p.n) ||
        !checkOperand(ctx, p, p.out, "out", p.m, p.n) ||
        (p.useSelf != 0 && !checkOperand(ctx, p, p.self, "self", p.m, p.n)))
        return;
    std::vector<float> floats;
    std::vector<int64_t> ints;
    // This block's rows, one batch at a time.
    for (uint64_t r = rows.begin; r < rows.end;) {
        const auto b = static_cast<int64_t>(r / static_cast<uint64_t>(p.m));
        const auto i0 = static_cast<int64_t>(r % static_cast<uint64_t>(p.m));
        const int64_t i1 = std::min<int64_t>(p.m, i0 + static_cast<int64_t>(rows.end - r));
        if (p.sequential != 0 && isFloating(p.dtype)) {
            if (p.dtype == mtiaTorchFloat64) {
                rowsSequential<double>(p, b, i0, i1);
            } else {
                rowsSequential<float>(p, b, i0, i1);
            }
        } else
            switch (p.dtype) {
            case mtiaTorchFloat32: rowsBlas<float>(p, b, i0, i1); break;
            case mtiaTorchFloat64: rowsBlas<double>(p, b, i0, i1); break;
            case mtiaTorchFloat16:
            case mtiaTorchBFloat16: rowsReduced(p, b, i0, i1, floats); break;
            default: rowsInteger(p, b, i0, i1, ints); break;
            }
        r += static_cast<uint64_t>(i1 - i0);
    }
}
