/* Arguments of the loss kernels in loss_kernels.cpp. Plain C, one struct per kernel, copied at
 * launch. */
#ifndef MTIA_TORCH_LOSS_PARAMS_H
#define MTIA_TORCH_LOSS_PARAMS_H

#include "kernel_params.h"

typedef enum mtiaTorchReduction {
    mtiaTorchReductionNone = 0, /* PyTorch's at::Reduction values */
    mtiaTorchReductionMean = 1,
    mtiaTorchReductionSum = 2
} mtiaTorchReduction;

/* The negative log likelihood of contiguous input (batch, classes, spatial) and target
 * (batch, spatial): nll_loss is spatial 1, nll_loss2d spatial H*W. The forward writes out (one
 * element per target, or one) and totalWeight; the backward writes all of gradInput. */
typedef struct mtiaTorchNllLoss {
    int32_t backward;  /* 0: forward, 1: backward */
    int32_t reduction; /* mtiaTorchReduction */
    int32_t inDtype, targetDtype, wDtype, outDtype, gDtype, twDtype;
    int64_t batch, classes, spatial;
    int64_t ignoreIndex;
    uint64_t input, target, weight; /* weight: 0 when absent */
    uint64_t out, totalWeight;      /* forward: the loss; both: the weight total (read back) */
    uint64_t gradOut, gradInput;    /* backward */
} mtiaTorchNllLoss;

#endif /* MTIA_TORCH_LOSS_PARAMS_H */
