/* Arguments of the convolution kernel in conv_kernels.cpp. Plain C; sizes count elements. Every
 * tensor is contiguous (N, C, D, H, W) of dtype; 1-d and 2-d convolutions have leading spatial dims
 * of size 1 (kernel 1, stride 1, padding 0, dilation 1). */
#ifndef MTIA_TORCH_CONV_PARAMS_H
#define MTIA_TORCH_CONV_PARAMS_H

#include <stdint.h>

typedef enum mtiaTorchConvOp {
    mtiaTorchConvForward = 0,    /* output = conv(input, weight) + bias */
    mtiaTorchConvGradInput = 1,  /* input (written) = the gradient of output (read) w.r.t. input */
    mtiaTorchConvGradWeight = 2, /* weight (written) = the gradient w.r.t. the weight */
    mtiaTorchConvGradBias = 3    /* bias (written) = output (read) summed over N and space */
} mtiaTorchConvOp;

typedef struct mtiaTorchConv {
    int32_t op;    /* mtiaTorchConvOp */
    int32_t dtype; /* mtiaTorchFloat32, mtiaTorchFloat64 or mtiaTorchInt64 */
    /* 0, or mtiaTorchFloat16 (mtiaTorchBFloat16) for a float computation of that type: the input
     * gradient (and transposed forward) rounds its columns, each col2im sum and the bias sum to
     * it, as the CPU's float16 col2im computes in the type itself. */
    int32_t roundTo;
    int32_t reserved;
    int64_t batch, groups, inChannels, outChannels;
    int64_t inSize[3], outSize[3], kernel[3], stride[3], padding[3], dilation[3];
    /* Work items the launch's blocks share: forward: batch * groups * chunks (chunks split the
     * output positions); grad input: batch * groups; grad weight: groups * chunks (chunks split the
     * weight's columns, inChannels/groups * kernel volume); grad bias: outChannels. */
    int64_t chunks;
    uint64_t input, weight, bias, output; /* bias: 0 when absent (forward) */
} mtiaTorchConv;

#endif /* MTIA_TORCH_CONV_PARAMS_H */
