/* Arguments of the strided kernels in elementwise_kernels.cpp, shared by the module that defines
 * the kernels and the extension that launches them. Plain C: each struct is one kernel argument,
 * copied at launch, so a graph replay sees the same values. Sizes and strides count elements. */
#ifndef MTIA_TORCH_KERNEL_PARAMS_H
#define MTIA_TORCH_KERNEL_PARAMS_H

#include <stdint.h>

#define MTIA_TORCH_MAX_DIMS 16

/* Element types the kernels read and write (PyTorch's names in the comments). */
typedef enum mtiaTorchDtype {
    mtiaTorchBool = 0,     /* torch.bool */
    mtiaTorchUInt8 = 1,    /* torch.uint8 */
    mtiaTorchInt8 = 2,     /* torch.int8 */
    mtiaTorchInt16 = 3,    /* torch.int16 */
    mtiaTorchInt32 = 4,    /* torch.int32 */
    mtiaTorchInt64 = 5,    /* torch.int64 */
    mtiaTorchFloat16 = 6,  /* torch.float16 */
    mtiaTorchBFloat16 = 7, /* torch.bfloat16 */
    mtiaTorchFloat32 = 8,  /* torch.float32 */
    mtiaTorchFloat64 = 9   /* torch.float64 */
} mtiaTorchDtype;

typedef enum mtiaTorchOp {
    mtiaTorchOpCopy = 0,    /* out = a (converted to out's type) */
    mtiaTorchOpFill = 1,    /* out = alpha */
    mtiaTorchOpLinComb = 2, /* out = alpha * a + beta * b */
    mtiaTorchOpScale = 3,   /* out = alpha * a */
    mtiaTorchOpMul = 4,     /* out = a * b */
    mtiaTorchOpRelu = 5,    /* out = a < 0 ? 0 : a */
    mtiaTorchOpSumInto =
        6, /* out[...] += a[...]: out's strides are 0 along the summed dims; one block */
    mtiaTorchOpThresholdBackward =
        7 /* out = b <= alpha ? 0 : a (a: the gradient, b: the forward input) */
} mtiaTorchOp;

typedef struct mtiaTorchTensorArg {
    uint64_t data; /* device address of element 0 (storage offset applied); 0 when unused */
    int32_t dtype; /* mtiaTorchDtype */
    int32_t reserved;
    int64_t strides[MTIA_TORCH_MAX_DIMS];
} mtiaTorchTensorArg;

/* One elementwise operation over the index space sizes[0..ndim). Integer outputs compute in int64
 * with ialpha/ibeta, floating ones in double with alpha/beta. */
typedef struct mtiaTorchElementwise {
    int32_t op;   /* mtiaTorchOp */
    int32_t ndim; /* 0..MTIA_TORCH_MAX_DIMS; 0 is a single element */
    int64_t sizes[MTIA_TORCH_MAX_DIMS];
    uint64_t numel;
    double alpha, beta;
    int64_t ialpha, ibeta;
    mtiaTorchTensorArg out, a, b;
} mtiaTorchElementwise;

#endif /* MTIA_TORCH_KERNEL_PARAMS_H */
