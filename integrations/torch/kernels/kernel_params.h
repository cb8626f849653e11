/* Element types and strided tensor arguments shared by the kernel module (kernels/) and the
 * extension that launches its kernels (csrc/). Plain C: each struct is one kernel argument,
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

typedef struct mtiaTorchTensorArg {
    uint64_t data; /* device address of element 0 (storage offset applied); 0 when unused */
    int32_t dtype; /* mtiaTorchDtype */
    int32_t reserved;
    int64_t strides[MTIA_TORCH_MAX_DIMS];
} mtiaTorchTensorArg;

#endif /* MTIA_TORCH_KERNEL_PARAMS_H */
