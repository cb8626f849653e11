// From ATen tensors to the kernel module's arguments: dtype codes, strides broadcast to an index
// space, and the device-side helpers every kernel file uses (an empty tensor on the device, a
// contiguous copy made on the device).
#pragma once

#include "../kernels/kernel_params.h"

#include <ATen/Tensor.h>

namespace torch_mtia {

// The kernel dtype code of t's dtype; throws for a dtype the kernels do not handle.
int32_t kernelDtype(at::ScalarType type);
bool kernelSupports(at::ScalarType type);

// t as an operand over the index space sizes: t's sizes are broadcast against sizes from the right
// (size-1 dims and missing leading dims get stride 0).
mtiaTorchTensorArg tensorArg(const at::Tensor& t, at::IntArrayRef sizes);

// Sets the float and the integer form of a scalar (alpha or beta).
void setScalar(double& f, int64_t& i, const c10::Scalar& s);

// A new contiguous tensor on device (the current device must be set to it).
at::Tensor emptyDevice(at::IntArrayRef sizes, at::ScalarType type, c10::Device device);

// Copies src into dst (same device, any strides and dtypes) with the pointwise kernel.
void copyOnDevice(const at::Tensor& dst, const at::Tensor& src);

// t itself when contiguous with dtype type, else a contiguous copy made on the device.
at::Tensor contiguousOnDevice(const at::Tensor& t, at::ScalarType type);

bool isDevice(const at::Tensor& t);

}  // namespace torch_mtia
