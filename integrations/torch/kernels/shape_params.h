/* Arguments of the shape and factory kernels in shape_kernels.cpp (plain C, one struct per kernel,
 * sizes and strides in elements). */
#ifndef MTIA_TORCH_SHAPE_PARAMS_H
#define MTIA_TORCH_SHAPE_PARAMS_H

#include "kernel_params.h"

/* tril (upper = 0) or triu (upper = 1) over the last two dims of sizes[0..ndim) (ndim >= 2): out =
 * src where the element is kept (col - row <= diagonal for tril, >= for triu), else 0. out may be
 * src (in place: only the zeroed part is written). */
typedef struct mtiaTorchTriangle {
    int32_t upper, ndim;
    int64_t diagonal;
    int64_t sizes[MTIA_TORCH_MAX_DIMS];
    uint64_t numel;
    mtiaTorchTensorArg out, src;
} mtiaTorchTriangle;

/* A range into out (numel elements at stride): arange (linear = 0): start + i * step, in int64 for
 * integer outputs and double for floating ones; linspace (linear = 1): from start to end in numel
 * steps, the first half counted from start and the second from end, in float for float32, half and
 * bfloat16 outputs and double otherwise (as the CPU computes). */
typedef struct mtiaTorchRange {
    int32_t linear, reserved;
    uint64_t numel;
    uint64_t out;
    int32_t dtype, reserved2;
    int64_t stride;
    double start, step, end;
    int64_t istart, istep, iend;
} mtiaTorchRange;

/* out = src over sizes[0..ndim) (ndim >= 1), both of dtype: a copy without conversion, rows of the
 * last dim copied whole when both are contiguous along it (cat, flip). */
typedef struct mtiaTorchStridedCopy {
    int32_t ndim, dtype;
    int64_t sizes[MTIA_TORCH_MAX_DIMS];
    uint64_t numel;
    mtiaTorchTensorArg out, src;
} mtiaTorchStridedCopy;

#endif /* MTIA_TORCH_SHAPE_PARAMS_H */
