// MTIA view kernels that PyTorch does not provide for every backend: unfold (which repeat uses) as
// a view over the same storage, and its backward. The other views are PyTorch's composite kernels
// over as_strided / view / _reshape_alias (ops_tensor.cpp).
#include "tensor_args.h"

#include <ATen/Functions.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/ops/as_strided_native.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

namespace torch_mtia {
namespace {

// Windows of `size` elements every `step` along dim, as a new last dim: the same storage, dim's
// stride multiplied by step, the window's stride dim's own.
at::Tensor unfold(const at::Tensor& self, int64_t dimension, int64_t size, int64_t step) {
    const int64_t ndim = self.dim();
    const int64_t dim = at::maybe_wrap_dim(dimension, ndim, /*wrap_scalar=*/true);
    const int64_t length = ndim == 0 ? 1 : self.size(dim);
    TORCH_CHECK(size <= length, "maximum size for tensor at dimension ", dim, " is ", length,
                " but size is ", size);
    TORCH_CHECK(size >= 0, "size is ", size, " but must be >= 0");
    TORCH_CHECK(step > 0, "step is ", step, " but must be > 0");
    std::vector<int64_t> sizes(self.sizes().begin(), self.sizes().end());
    std::vector<int64_t> strides(self.strides().begin(), self.strides().end());
    const int64_t windowStride = ndim == 0 ? 1 : strides[dim];
    if (ndim > 0) {
        sizes[dim] = (length - size) / step + 1;
        strides[dim] *= step;
    }
    sizes.push_back(size);
    strides.push_back(windowStride);
    return at::native::as_strided_tensorimpl(self, sizes, strides, self.storage_offset());
}

// The windows' gradients summed back into the input's shape: for each position k in a window the
// elements k, k + step, ... of dim (distinct for one k) receive window k's gradient.
at::Tensor unfoldBackward(const at::Tensor& grad, c10::SymIntArrayRef symSizes, int64_t dim,
                          int64_t size, int64_t step) {
    const c10::DeviceGuard guard(grad.device());
    const at::IntArrayRef inputSizes = C10_AS_INTARRAYREF_SLOW(symSizes);
    at::Tensor gradInput = emptyDevice(inputSizes, grad.scalar_type(), grad.device());
    gradInput.zero_();
    if (grad.numel() == 0) return gradInput;
    const int64_t ndim = static_cast<int64_t>(inputSizes.size());
    if (ndim == 0) {
        gradInput.add_(grad.reshape({}));
        return gradInput;
    }
    dim = at::maybe_wrap_dim(dim, ndim);
    const int64_t windows = grad.size(dim);
    std::vector<int64_t> sizes(inputSizes.begin(), inputSizes.end());
    std::vector<int64_t> strides(gradInput.strides().begin(), gradInput.strides().end());
    sizes[dim] = windows;
    const int64_t along = strides[dim];
    strides[dim] = along * step;
    for (int64_t k = 0; k < size; ++k) {
        at::Tensor target = gradInput.as_strided(sizes, strides, k * along);
        target.add_(grad.select(-1, k));
    }
    return gradInput;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, MTIA, m) {
    m.impl("unfold", TORCH_FN(unfold));
    m.impl("unfold_backward", TORCH_FN(unfoldBackward));
}

}  // namespace torch_mtia
