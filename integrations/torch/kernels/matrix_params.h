/* Arguments of the matrix kernels in matrix_kernels.cpp (mm, bmm, addmm, baddbmm, addmv, mv, dot
 * and matmul's paths all become one batched product). Plain C; sizes and strides count elements. */
#ifndef MTIA_TORCH_MATRIX_PARAMS_H
#define MTIA_TORCH_MATRIX_PARAMS_H

#include <stdint.h>

/* A batch of matrices: element (b, i, j) at data + b * batchStride + i * rowStride + j * colStride.
 * For the BLAS paths the host guarantees one of rowStride/colStride is 1 and the other at least the
 * size of the dimension it does not step over (BLAS's leading dimension). */
typedef struct mtiaTorchMatrixArg {
    uint64_t data;
    int64_t batchStride, rowStride, colStride;
} mtiaTorchMatrixArg;

/* out[b] = beta * self[b] + alpha * a[b] @ b[b] for b < batch, a[b]: m x k, b[b]: k x n; self, out:
 * m x n (self may broadcast: stride 0). All operands have dtype. useSelf == 0 ignores self and beta
 * (beta == 0: NaN in self does not propagate, as in PyTorch); selfIsOut says self is out with the
 * same layout (addmm_): no copy of self is made. Integer dtypes use ialpha/ibeta. sequential != 0
 * sums each product element in order of k in the compute type instead of calling BLAS: the CPU's
 * bmm/baddbmm does so for small matrices, and this gives its roundings. */
typedef struct mtiaTorchGemm {
    int32_t dtype; /* mtiaTorchDtype */
    int32_t useSelf;
    int32_t selfIsOut;
    int32_t sequential;
    int64_t batch, m, n, k;
    double alpha, beta;
    int64_t ialpha, ibeta;
    mtiaTorchMatrixArg a, b, self, out;
    /* How the work is cut (torch_mtia.gemm_tuning picks it per shape class; all zero: one product
     * per block over its rows, as before these fields existed). Any values give the same result up
     * to BLAS's summation order; sequential and the integer dtypes sum each element in order of k
     * whatever the cut, so their results never change. splitCols != 0: the launch's blocks take
     * column panels of all batches' outputs instead of rows. tileM, tileN > 0: a block's share is
     * multiplied in tileM x tileN pieces, one BLAS call each; tileK > 0: in panels of depth tileK,
     * accumulated in the compute type (float16/bfloat16: widened one panel at a time, so that the
     * panels stay in cache; still one rounding at the store). */
    int32_t splitCols;
    int32_t tileM, tileN, tileK;
} mtiaTorchGemm;

#endif /* MTIA_TORCH_MATRIX_PARAMS_H */
