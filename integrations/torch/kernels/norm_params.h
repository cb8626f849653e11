/* Arguments of the normalisation kernels in norm_kernels.cpp. Plain C, one struct per kernel,
 * copied at launch. Sizes and strides count elements; an unused operand's address is 0. */
#ifndef MTIA_TORCH_NORM_PARAMS_H
#define MTIA_TORCH_NORM_PARAMS_H

#include "kernel_params.h"

typedef enum mtiaTorchLayerNormOp {
    mtiaTorchLayerNormForward = 0,       /* y, mean, rstd from x, weight, bias (one block: rows) */
    mtiaTorchLayerNormBackwardInput = 1, /* gradInput from gradOut, x, mean, rstd, weight (rows) */
    mtiaTorchLayerNormBackwardParams = 2 /* gradWeight, gradBias (columns) */
} mtiaTorchLayerNormOp;

/* Layer norm over the last cols elements of contiguous (rows, cols) tensors. */
typedef struct mtiaTorchLayerNorm {
    int32_t op;
    int32_t xDtype, wDtype, statDtype, yDtype, gDtype;
    int64_t rows, cols;
    double eps;
    uint64_t x, weight, bias, y, mean, rstd; /* y: the output, or the input's gradient */
    uint64_t gradOut, gradWeight, gradBias;
} mtiaTorchLayerNorm;

typedef enum mtiaTorchBatchNormOp {
    mtiaTorchBatchNormTrain = 0, /* batch statistics; saveMean/saveInvstd; running stats updated */
    mtiaTorchBatchNormEval = 1,  /* running statistics */
    mtiaTorchBatchNormBackward = 2 /* train: saved statistics, else running ones */
} mtiaTorchBatchNormOp;

/* Batch norm of an (N, C, ...) tensor of any strides (channels-last included): one channel
 * (dim 1) per work item. */
typedef struct mtiaTorchBatchNorm {
    int32_t op;
    int32_t ndim;  /* 2..MTIA_TORCH_MAX_DIMS */
    int32_t train; /* the backward's: statistics from saveMean/saveInvstd */
    int32_t xDtype, yDtype, gDtype, gxDtype, wDtype, runDtype, saveDtype, gwDtype, reserved;
    int64_t sizes[MTIA_TORCH_MAX_DIMS];
    int64_t xStrides[MTIA_TORCH_MAX_DIMS];
    int64_t yStrides[MTIA_TORCH_MAX_DIMS];  /* forward: the output */
    int64_t gStrides[MTIA_TORCH_MAX_DIMS];  /* backward: the output's gradient */
    int64_t gxStrides[MTIA_TORCH_MAX_DIMS]; /* backward: the input's gradient */
    double eps, momentum;
    uint64_t x, y, weight, bias, runningMean, runningVar, saveMean, saveInvstd;
    uint64_t gradOut, gradInput, gradWeight, gradBias;
} mtiaTorchBatchNorm;

#endif /* MTIA_TORCH_NORM_PARAMS_H */
