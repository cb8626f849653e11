// Device-side matrix products shared by the matrix and convolution kernels: a strided matrix view,
// and C = alpha * A @ B + beta * C through single-threaded OpenBLAS (cblas), with the transposes
// and leading dimensions chosen from the views' strides; int64 (convolution's integer path) by an
// exact loop.
#pragma once

#include <cblas.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace mtia_kernels {

// rows x cols elements, element (i, j) at data[i * rs + j * cs].
template <class T>
struct MatView {
    T* data;
    int64_t rows, cols, rs, cs;
    MatView transposed() const { return {data, cols, rows, cs, rs}; }
};

// Whether BLAS can read v in place: one unit stride, the other a valid leading dimension. Size-1
// dims may have any stride.
template <class T>
bool blasReadable(const MatView<T>& v) {
    const int64_t rs = v.rows == 1 ? std::max<int64_t>(1, v.cols) : v.rs;
    const int64_t cs = v.cols == 1 ? 1 : v.cs;
    if (cs == 1 && rs >= std::max<int64_t>(1, v.cols)) return true;
    const int64_t rs2 = v.rows == 1 ? 1 : v.rs;
    const int64_t cs2 = v.cols == 1 ? std::max<int64_t>(1, v.rows) : v.cs;
    return rs2 == 1 && cs2 >= std::max<int64_t>(1, v.rows);
}

// The (transpose, leading dimension) with which row-major cblas reads v (blasReadable(v) holds).
template <class T>
std::pair<CBLAS_TRANSPOSE, int64_t> blasLayout(const MatView<T>& v) {
    const int64_t rs = v.rows == 1 ? std::max<int64_t>(1, v.cols) : v.rs;
    const int64_t cs = v.cols == 1 ? 1 : v.cs;
    if (cs == 1 && rs >= std::max<int64_t>(1, v.cols)) return {CblasNoTrans, rs};
    const int64_t cs2 = v.cols == 1 ? std::max<int64_t>(1, v.rows) : v.cs;
    return {CblasTrans, cs2};
}

inline void blasCall(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m, int64_t n, int64_t k,
                     float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
                     float beta, float* c, int64_t ldc) {
    cblas_sgemm(CblasRowMajor, ta, tb, static_cast<blasint>(m), static_cast<blasint>(n),
                static_cast<blasint>(k), alpha, a, static_cast<blasint>(lda), b,
                static_cast<blasint>(ldb), beta, c, static_cast<blasint>(ldc));
}

inline void blasCall(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m, int64_t n, int64_t k,
                     double alpha, const double* a, int64_t lda, const double* b, int64_t ldb,
                     double beta, double* c, int64_t ldc) {
    cblas_dgemm(CblasRowMajor, ta, tb, static_cast<blasint>(m), static_cast<blasint>(n),
                static_cast<blasint>(k), alpha, a, static_cast<blasint>(lda), b,
                static_cast<blasint>(ldb), beta, c, static_cast<blasint>(ldc));
}

// int64 products, exact and wrapping as the CPU's integer arithmetic: no BLAS, a plain loop.
inline void gemmInt(int64_t alpha, const MatView<const int64_t>& a, const MatView<const int64_t>& b,
                    int64_t beta, const MatView<int64_t>& c) {
    auto mul = [](int64_t x, int64_t y) {
        return static_cast<int64_t>(static_cast<uint64_t>(x) * static_cast<uint64_t>(y));
    };
    auto add = [](int64_t x, int64_t y) {
        return static_cast<int64_t>(static_cast<uint64_t>(x) + static_cast<uint64_t>(y));
    };
    for (int64_t i = 0; i < c.rows; ++i) {
        for (int64_t j = 0; j < c.cols; ++j) {
            int64_t acc = 0;
            for (int64_t k = 0; k < a.cols; ++k)
                acc = add(acc, mul(a.data[i * a.rs + k * a.cs], b.data[k * b.rs + j * b.cs]));
            int64_t& x = c.data[i * c.rs + j * c.cs];
            x = beta == 0 ? mul(alpha, acc) : add(mul(beta, x), mul(alpha, acc));
        }
    }
}

// c = alpha * a @ b + beta * c (beta == 0: c is not read). All three blasReadable; c must not
// overlap a or b. k == 0 scales c. The device's engines each run one block, so BLAS runs on the
// calling engine thread only (the module links the single-threaded OpenBLAS).
template <class T>
void gemm(T alpha, const MatView<const T>& a, const MatView<const T>& b, T beta,
          const MatView<T>& c) {
    if (c.rows == 0 || c.cols == 0) return;
    if constexpr (std::is_same_v<T, int64_t>) {
        gemmInt(alpha, a, b, beta, c);
    } else if (a.cols == 0) {
        for (int64_t i = 0; i < c.rows; ++i)
            for (int64_t j = 0; j < c.cols; ++j) {
                T& x = c.data[i * c.rs + j * c.cs];
                x = beta == T(0) ? T(0) : beta * x;
            }
    } else if (c.cols != 1 && c.cs != 1) {
        // Row-major cblas writes c with unit column stride; a column-major c is c^T = b^T @ a^T.
        gemm(alpha, b.transposed(), a.transposed(), beta, c.transposed());
    } else {
        const auto [ta, lda] = blasLayout(a);
        const auto [tb, ldb] = blasLayout(b);
        const int64_t ldc = c.rows == 1 ? std::max<int64_t>(1, c.cols) : c.rs;
        blasCall(ta, tb, c.rows, c.cols, a.cols, alpha, a.data, lda, b.data, ldb, beta, c.data,
                 ldc);
    }
}

}  // namespace mtia_kernels
