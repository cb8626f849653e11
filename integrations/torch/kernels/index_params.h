/* Arguments of the indexing kernels in index_kernels.cpp (plain C, one struct per kernel, sizes and
 * strides in elements). */
#ifndef MTIA_TORCH_INDEX_PARAMS_H
#define MTIA_TORCH_INDEX_PARAMS_H

#include "kernel_params.h"

#define MTIA_TORCH_MAX_INDICES 8

typedef enum mtiaTorchIndexReduce {
    mtiaTorchIndexAssign = 0, /* target = value */
    mtiaTorchIndexAdd = 1,    /* target += alpha * value */
    mtiaTorchIndexMul = 2,    /* target *= value */
    mtiaTorchIndexMax = 3,    /* target = max(target, value), NaN propagates */
    mtiaTorchIndexMin = 4     /* target = min(target, value), NaN propagates */
} mtiaTorchIndexReduce;

/* One indexed copy over the index space sizes[0..ndim): for each point, the element of src at
 * src.strides (plus, when gather, sum_k index_k * indexedStrides[k]) is written to out at
 * out.strides (plus that sum when not gather), combined with the old value by reduce. Index
 * tensors are int64 or int32; a value outside [-indexedSizes[k], indexedSizes[k]) (or [0, size)
 * when !allowNegative) faults the launch naming opName. A scatter (!gather) with several blocks
 * would race on repeated indices: the host launches it on one block, which goes in order, as the
 * CPU does. */
typedef struct mtiaTorchIndexed {
    int32_t gather;        /* 1: the index applies to src, 0: to out */
    int32_t reduce;        /* mtiaTorchIndexReduce */
    int32_t ndim;          /* 0..MTIA_TORCH_MAX_DIMS */
    int32_t nindex;        /* 0..MTIA_TORCH_MAX_INDICES */
    int32_t allowNegative; /* negative indices count from the end (advanced indexing) */
    int32_t reserved;
    int64_t sizes[MTIA_TORCH_MAX_DIMS];
    uint64_t numel;
    double alpha; /* the scale of mtiaTorchIndexAdd (floating outputs) */
    int64_t ialpha;
    mtiaTorchTensorArg out, src;
    mtiaTorchTensorArg index[MTIA_TORCH_MAX_INDICES];
    int64_t indexedSizes[MTIA_TORCH_MAX_INDICES];
    int64_t indexedStrides[MTIA_TORCH_MAX_INDICES];
    char opName[32];
} mtiaTorchIndexed;

/* embedding_dense_backward: gradWeight (numWeights x dim, contiguous, zeroed by the host) +=
 * grad[i] for each index i (grad: numIndices x dim rows at gradRowStride, gradColStride), skipping
 * paddingIdx, each scaled by 1 / (count of its index) when scaleByFreq; counts is an int64 scratch
 * of numWeights elements (zeroed by the host) when scaleByFreq. One block, in index order. */
typedef struct mtiaTorchEmbeddingBackward {
    uint64_t gradWeight, grad, indices, counts;
    int32_t dtype, indexDtype;
    int32_t scaleByFreq, reserved;
    int64_t numWeights, numIndices, dim, paddingIdx;
    int64_t gradRowStride, gradColStride, indexStride;
} mtiaTorchEmbeddingBackward;

/* embedding_renorm_: each row of weight (numWeights x dim at rowStride, colStride) named by an
 * index whose normType-norm exceeds maxNorm is scaled by maxNorm / (norm + 1e-7). One block. */
typedef struct mtiaTorchEmbeddingRenorm {
    uint64_t weight, indices;
    int32_t dtype, indexDtype;
    int64_t numWeights, numIndices, dim;
    int64_t rowStride, colStride, indexStride;
    double maxNorm, normType;
} mtiaTorchEmbeddingRenorm;

/* masked_scatter_: the elements of self (over sizes[0..ndim)) whose mask element is nonzero take
 * the consecutive elements of source (contiguous, sourceNumel elements, self's dtype), in row-major
 * order; running out of source faults the launch. One block. */
typedef struct mtiaTorchMaskedScatter {
    int32_t ndim, reserved;
    int64_t sizes[MTIA_TORCH_MAX_DIMS];
    uint64_t numel;
    mtiaTorchTensorArg self, mask;
    uint64_t source;
    int64_t sourceNumel;
} mtiaTorchMaskedScatter;

/* nonzero, in two launches on one block: count writes the number of nonzero elements of src
 * (sizes/strides over ndim dims) to *count (int64); write stores their coordinates, in row-major
 * order, into out (int64, n x max(ndim,1) at outStrides), n = the count. */
typedef struct mtiaTorchNonzero {
    int32_t write, ndim;
    int64_t sizes[MTIA_TORCH_MAX_DIMS];
    uint64_t numel;
    mtiaTorchTensorArg src;
    uint64_t count, out;
    int64_t outStrides[2];
    int64_t outRows;
} mtiaTorchNonzero;

#endif /* MTIA_TORCH_INDEX_PARAMS_H */
