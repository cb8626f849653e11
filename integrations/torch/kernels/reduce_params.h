/* Arguments of the reduction, scan and softmax kernels in reduce_kernels.cpp. Plain C, one struct
 * per kernel, copied at launch. Sizes and strides count elements. */
#ifndef MTIA_TORCH_REDUCE_PARAMS_H
#define MTIA_TORCH_REDUCE_PARAMS_H

#include "kernel_params.h"

typedef enum mtiaTorchReduceOp {
    mtiaTorchReduceSum = 0,
    mtiaTorchReduceProd = 1,
    mtiaTorchReduceMean = 2,
    mtiaTorchReduceMax = 3, /* out: the value (may be unused), aux: its first index (int64) */
    mtiaTorchReduceMin = 4,
    mtiaTorchReduceVar = 5,  /* out: var (std when takeSqrt), aux: the mean (may be unused) */
    mtiaTorchReduceNorm = 6, /* order in scalar */
    mtiaTorchReduceAll = 7,
    mtiaTorchReduceAny = 8,
    mtiaTorchReduceLogSumExp = 9,
    mtiaTorchReduceCumSum = 10, /* a scan along the one reduced dim; out has the input's shape */
    mtiaTorchReduceCumProd = 11
} mtiaTorchReduceOp;

/* The input as two index spaces: the kept dims (one per output element, outer) and the reduced
 * dims (one accumulation each). out and aux are addressed over the kept dims; a scan also
 * addresses them along the reduced dim (outScanStride, auxScanStride). */
typedef struct mtiaTorchReduce {
    int32_t op;       /* mtiaTorchReduceOp */
    int32_t keptDims; /* 0..MTIA_TORCH_MAX_DIMS */
    int32_t redDims;  /* 0..MTIA_TORCH_MAX_DIMS (0: one element) */
    int32_t takeSqrt; /* var: store the square root (std) */
    uint64_t keptNumel, redNumel;
    int64_t keptSizes[MTIA_TORCH_MAX_DIMS];
    int64_t redSizes[MTIA_TORCH_MAX_DIMS];
    double scalar; /* norm: the order p; var: the correction */
    uint64_t in;   /* element 0 of the input */
    int32_t inDtype, outDtype, auxDtype;
    int32_t
        partial; /* sum/mean of one output: block b writes its share's sum (float64) to aux[b] */
    uint64_t meanCount; /* mean: the divisor when not 0 (a mean of partial sums), else redNumel */
    uint64_t out, aux;  /* 0 when unused */
    int64_t inKeptStrides[MTIA_TORCH_MAX_DIMS];
    int64_t inRedStrides[MTIA_TORCH_MAX_DIMS];
    int64_t outStrides[MTIA_TORCH_MAX_DIMS];
    int64_t auxStrides[MTIA_TORCH_MAX_DIMS];
    int64_t outScanStride, auxScanStride;
} mtiaTorchReduce;

typedef enum mtiaTorchSoftmaxOp {
    mtiaTorchSoftmax = 0,           /* out = softmax(in) */
    mtiaTorchLogSoftmax = 1,        /* out = log_softmax(in) */
    mtiaTorchSoftmaxBackward = 2,   /* out = y * (g - sum(g * y)), in: y (the output), grad: g */
    mtiaTorchLogSoftmaxBackward = 3 /* out = g - exp(y) * sum(g) */
} mtiaTorchSoftmaxOp;

/* Softmax along the middle dim of contiguous (outer, dim, inner) tensors. */
typedef struct mtiaTorchSoftmaxParams {
    int32_t op; /* mtiaTorchSoftmaxOp */
    int32_t inDtype, outDtype, gradDtype;
    uint64_t in, out, grad; /* grad: 0 for the forwards */
    int64_t outer, dim, inner;
} mtiaTorchSoftmaxParams;

#endif /* MTIA_TORCH_REDUCE_PARAMS_H */
