/* Arguments of the collective kernels in dist_kernels.cpp (the c10d backend's same-host path,
 * csrc/dist_backend.cpp). Plain C, one struct per kernel, copied at launch. */
#ifndef MTIA_TORCH_DIST_PARAMS_H
#define MTIA_TORCH_DIST_PARAMS_H

#include "kernel_params.h"

/* The most processes of one host that one reduction reads from. */
#define MTIA_TORCH_DIST_MAX_PEERS 8

/* The reduction of a collective; c10d's ReduceOp values that the kernel supports. */
typedef enum mtiaTorchDistOp {
    mtiaTorchDistSum = 0,
    mtiaTorchDistAvg = 1,
    mtiaTorchDistProduct = 2,
    mtiaTorchDistMin = 3,
    mtiaTorchDistMax = 4
} mtiaTorchDistOp;

/* dst[i] = op over s of src[s][i], for i < count; dst may be one of the sources. src[s] may be
 * another process's buffer on another device of the machine, mapped into this one with
 * mtiaIpcOpenMemHandle. float and double combine in their own type (min and max propagate NaN),
 * float16 and bfloat16 in double and round once; integers combine with wrap-around; bool sum is or,
 * product is and. Avg divides the sum by sources (integers: the sum wrapped to the dtype, then
 * truncating division, as NCCL's ncclAvg). */
typedef struct mtiaTorchDistReduce {
    int32_t dtype;   /* mtiaTorchDtype */
    int32_t op;      /* mtiaTorchDistOp */
    int32_t sources; /* 1 .. MTIA_TORCH_DIST_MAX_PEERS */
    int32_t reserved;
    int64_t count;
    uint64_t src[MTIA_TORCH_DIST_MAX_PEERS];
    uint64_t dst;
} mtiaTorchDistReduce;

#endif /* MTIA_TORCH_DIST_PARAMS_H */
