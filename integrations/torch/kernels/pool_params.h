/* Arguments of the 2-d pooling kernel in pool_kernels.cpp. Plain C; sizes count elements. input,
 * output (and their gradients) are contiguous planes (N * C planes of H x W) of dtype; indices are
 * int64, each the flat position h * inW + w of the maximum in its input plane. */
#ifndef MTIA_TORCH_POOL_PARAMS_H
#define MTIA_TORCH_POOL_PARAMS_H

#include <stdint.h>

typedef enum mtiaTorchPoolOp {
    mtiaTorchPoolMax = 0,         /* output, indices = max over each window */
    mtiaTorchPoolMaxBackward = 1, /* input (written) = output (read) added at indices */
    mtiaTorchPoolAvg = 2,         /* output = window sum / divisor */
    mtiaTorchPoolAvgBackward = 3, /* input (written) = output (read) / divisor over windows */
    mtiaTorchPoolAdaptiveAvg = 4, /* output = mean of each adaptive window */
    mtiaTorchPoolAdaptiveAvgBackward = 5
} mtiaTorchPoolOp;

typedef struct mtiaTorchPool2d {
    int32_t op;    /* mtiaTorchPoolOp */
    int32_t dtype; /* a floating mtiaTorchDtype */
    int32_t countIncludePad;
    int32_t reserved;
    int64_t divisorOverride; /* 0: none */
    int64_t planes, inH, inW, outH, outW;
    int64_t kH, kW, sH, sW, pH, pW, dH, dW;
    uint64_t input, output, indices;
} mtiaTorchPool2d;

#endif /* MTIA_TORCH_POOL_PARAMS_H */
