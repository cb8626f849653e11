// MTIA shape and factory kernels: cat, tril/triu, arange, linspace, eye, flip, roll and
// _local_scalar_dense (.item()). cat, flip and roll are strided copies on the device (the
// strided copy kernel, or the converting pointwise copy across dtypes); tril/triu and the ranges
// have their own kernels (kernels/shape_kernels.cpp).
// Shapes, dtypes and argument errors come from PyTorch's meta functions where the operator has one.
#include "device_kernels.h"
#include "mtia_check.h"
#include "streams.h"
#include "tensor_args.h"

#include "../kernels/shape_params.h"

#include <ATen/Dispatch.h>
#include <ATen/Functions.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/WrapDimUtilsMulti.h>
#include <ATen/native/RangeUtils.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <cmath>

namespace torch_mtia {
namespace {

at::Tensor metaOf(const at::Tensor& t) {
    return at::empty_strided(t.sizes(), t.strides(), t.options().device(at::kMeta));
}

// The strided copy kernel's params for src into dst (one dtype; src already of dst's shape).
mtiaTorchStridedCopy stridedCopyOver(const at::Tensor& dst, const at::Tensor& src) {
    mtiaTorchStridedCopy p{};
    p.ndim = static_cast<int32_t>(dst.dim());
    p.dtype = kernelDtype(dst.scalar_type());
    for (int64_t d = 0; d < dst.dim(); ++d) p.sizes[d] = dst.size(d);
    p.numel = static_cast<uint64_t>(dst.numel());
    p.out = tensorArg(dst, dst.sizes());
    p.src = tensorArg(src, dst.sizes());
    return p;
}

// dst = src, both on the device, broadcasting src: a memcpy when both are contiguous and of one
// dtype, the strided copy kernel when of one dtype, else the converting pointwise copy.
void copyInto(const at::Tensor& dst, const at::Tensor& src) {
    if (dst.numel() == 0) return;
    if (src.scalar_type() != dst.scalar_type() || dst.dim() == 0 ||
        dst.dim() > MTIA_TORCH_MAX_DIMS) {
        copyOnDevice(dst, src);
        return;
    }
    if (src.sizes() == dst.sizes() && src.is_contiguous() && dst.is_contiguous()) {
        MTIA_CHECK(mtiaMemcpyAsync(dst.data_ptr(), src.data_ptr(), dst.numel() * dst.element_size(),
                                   mtiaMemcpyDeviceToDevice, nullptr));
        return;
    }
    mtiaTorchStridedCopy p = stridedCopyOver(dst, src);
    static ModuleKernel kernel("mtia_torch_strided_copy");
    kernel.launch(p, gridFor(p.numel));
}

// ---- cat ----

at::Tensor& catOut(const at::ITensorListRef& tensors, int64_t dim, at::Tensor& out) {
    const c10::DeviceGuard guard(out.device());
    std::vector<at::Tensor> inputs(tensors.begin(), tensors.end());
    std::vector<at::Tensor> metas;
    metas.reserve(inputs.size());
    for (const at::Tensor& t : inputs) {
        TORCH_CHECK(
            t.device() == out.device(),
            "torch.cat(): all input tensors and out must be on the same device, but inputs are on ",
            t.device(), " and out is on ", out.device());
        metas.push_back(metaOf(t));
    }
    // PyTorch's meta function: the shape, dtype and memory format of the result, and its errors.
    at::Tensor metaOut =
        at::empty_strided(out.sizes(), out.strides(), out.options().device(at::kMeta));
    at::cat_out(metaOut, metas, dim);
    if (out.sizes() != metaOut.sizes() || out.strides() != metaOut.strides()) {
        out.resize_(metaOut.sizes(), metaOut.suggest_memory_format());
    }
    at::assert_no_internal_overlap(out);
    for (const at::Tensor& t : inputs) at::assert_no_overlap(out, t);
    if (out.numel() == 0) return out;
    dim = at::maybe_wrap_dim(dim, out.dim());
    int64_t offset = 0;
    for (const at::Tensor& t : inputs) {
        if (t.dim() == 1 && t.size(0) == 0 && out.dim() != 1) continue;  // legacy empty input
        const int64_t n = t.size(dim);
        if (n == 0) continue;
        copyInto(out.narrow(dim, offset, n), t);
        offset += n;
    }
    return out;
}

at::Tensor cat(const at::ITensorListRef& tensors, int64_t dim) {
    std::vector<at::Tensor> inputs(tensors.begin(), tensors.end());
    TORCH_CHECK(!inputs.empty(), "torch.cat(): expected a non-empty list of Tensors");
    std::vector<at::Tensor> metas;
    for (const at::Tensor& t : inputs) metas.push_back(metaOf(t));
    const at::Tensor shape = at::cat(metas, dim);
    const c10::DeviceGuard guard(inputs[0].device());
    at::Tensor out = at::empty_strided(shape.sizes(), shape.strides(),
                                       inputs[0].options().dtype(shape.scalar_type()));
    return catOut(inputs, dim, out);
}

// ---- tril / triu ----

void triangleInto(const at::Tensor& out, const at::Tensor& self, int64_t diagonal, bool upper) {
    TORCH_CHECK(self.dim() >= 2, upper ? "triu" : "tril",
                ": input tensor must have at least 2 dimensions");
    TORCH_CHECK(self.dim() <= MTIA_TORCH_MAX_DIMS, "torch_mtia: ", upper ? "triu" : "tril",
                " of more than ", MTIA_TORCH_MAX_DIMS, " dims is not supported on the device");
    if (self.numel() == 0) return;
    mtiaTorchTriangle p{};
    p.upper = upper ? 1 : 0;
    p.ndim = static_cast<int32_t>(self.dim());
    p.diagonal = diagonal;
    for (int64_t d = 0; d < self.dim(); ++d) p.sizes[d] = self.size(d);
    p.numel = static_cast<uint64_t>(self.numel());
    p.out = tensorArg(out, self.sizes());
    p.src = tensorArg(self, self.sizes());
    static ModuleKernel kernel("mtia_torch_triangle");
    kernel.launch(p, gridFor(p.numel));
}

at::Tensor& triangleOut(const at::Tensor& self, int64_t diagonal, at::Tensor& out, bool upper) {
    const c10::DeviceGuard guard(self.device());
    TORCH_CHECK(self.dim() >= 2, upper ? "triu" : "tril",
                ": input tensor must have at least 2 dimensions");
    TORCH_CHECK(out.scalar_type() == self.scalar_type(), "Expected out tensor to have dtype ",
                self.scalar_type(), ", but got ", out.scalar_type(), " instead");
    TORCH_CHECK(out.device() == self.device(), "Expected out tensor on ", self.device());
    if (out.sizes() != self.sizes()) out.resize_(self.sizes());
    if (!out.is_same(self)) {
        at::assert_no_internal_overlap(out);
        at::assert_no_partial_overlap(out, self);
    }
    triangleInto(out, self, diagonal, upper);
    return out;
}

at::Tensor& trilOut(const at::Tensor& self, int64_t diagonal, at::Tensor& out) {
    return triangleOut(self, diagonal, out, false);
}
at::Tensor& triuOut(const at::Tensor& self, int64_t diagonal, at::Tensor& out) {
    return triangleOut(self, diagonal, out, true);
}
at::Tensor tril(const at::Tensor& self, int64_t diagonal) {
    at::Tensor out = at::empty_like(self, at::MemoryFormat::Preserve);
    return trilOut(self, diagonal, out);
}
at::Tensor triu(const at::Tensor& self, int64_t diagonal) {
    at::Tensor out = at::empty_like(self, at::MemoryFormat::Preserve);
    return triuOut(self, diagonal, out);
}
at::Tensor& trilInPlace(at::Tensor& self, int64_t diagonal) {
    return trilOut(self, diagonal, self);
}
at::Tensor& triuInPlace(at::Tensor& self, int64_t diagonal) {
    return triuOut(self, diagonal, self);
}

// ---- arange, linspace ----

void launchRange(const mtiaTorchRange& p) {
    if (p.numel == 0) return;
    static ModuleKernel kernel("mtia_torch_range");
    kernel.launch(p, gridFor(p.numel));
}

// Writes a range into out in out's element order: straight into a contiguous (or 1-dim) out,
// else through a contiguous temporary.
void rangeInto(at::Tensor& out, mtiaTorchRange p) {
    p.numel = static_cast<uint64_t>(out.numel());
    p.dtype = kernelDtype(out.scalar_type());
    if (out.dim() == 1 || out.is_contiguous()) {
        p.out = reinterpret_cast<uint64_t>(out.data_ptr());
        p.stride = out.dim() == 1 ? out.stride(0) : 1;
        launchRange(p);
        return;
    }
    at::Tensor tmp = emptyDevice(out.sizes(), out.scalar_type(), out.device());
    p.out = reinterpret_cast<uint64_t>(tmp.data_ptr());
    p.stride = 1;
    launchRange(p);
    out.copy_(tmp);
}

at::Tensor& arangeOut(const c10::Scalar& start, const c10::Scalar& end, const c10::Scalar& step,
                      at::Tensor& out) {
    const c10::DeviceGuard guard(out.device());
    int64_t size = 0;
    AT_DISPATCH_ALL_TYPES_AND2(at::kHalf, at::kBFloat16, out.scalar_type(), "arange_mtia", [&] {
        size = at::native::compute_arange_size<scalar_t>(start, end, step);
    });
    if (out.numel() != size) out.resize_({size});
    mtiaTorchRange p{};
    p.start = start.toDouble();
    p.step = step.toDouble();
    p.istart = start.toLong();
    p.istep = step.toLong();
    rangeInto(out, p);
    return out;
}

at::Tensor& linspaceOut(const c10::Scalar& start, const c10::Scalar& end, int64_t steps,
                        at::Tensor& out) {
    const c10::DeviceGuard guard(out.device());
    TORCH_CHECK(steps >= 0, "number of steps must be non-negative");
    TORCH_CHECK(kernelSupports(out.scalar_type()), "torch_mtia: linspace into ", out.scalar_type(),
                " is not supported on the device");
    if (out.numel() != steps) out.resize_({steps});
    if (steps == 0) return out;
    if (steps == 1) {
        out.fill_(start);
        return out;
    }
    mtiaTorchRange p{};
    p.linear = 1;
    // The CPU converts start and end to the output's type first, then steps in double for integer
    // outputs and in the output's type for floating ones.
    const at::ScalarType type = out.scalar_type();
    if (at::isFloatingType(type)) {
        p.start = start.toDouble();
        p.end = end.toDouble();
        if (type == at::kDouble) {
            p.step = (p.end - p.start) / static_cast<double>(steps - 1);
        } else {
            const float s = static_cast<float>(p.start), e = static_cast<float>(p.end);
            p.step = (e - s) / static_cast<float>(steps - 1);
        }
    } else {
        AT_DISPATCH_INTEGRAL_TYPES_AND(at::kBool, type, "linspace_mtia", [&] {
            p.start = static_cast<double>(start.to<scalar_t>());
            p.end = static_cast<double>(end.to<scalar_t>());
        });
        p.step = (p.end - p.start) / static_cast<double>(steps - 1);
    }
    rangeInto(out, p);
    return out;
}

// ---- eye ----

at::Tensor& eyeMOut(int64_t n, int64_t m, at::Tensor& out) {
    const c10::DeviceGuard guard(out.device());
    TORCH_CHECK(n >= 0, "n must be greater or equal to 0, got ", n);
    TORCH_CHECK(m >= 0, "m must be greater or equal to 0, got ", m);
    out.resize_({n, m});
    out.zero_();
    if (n > 0 && m > 0) out.diagonal().fill_(1);
    return out;
}

at::Tensor& eyeOut(int64_t n, at::Tensor& out) {
    return eyeMOut(n, n, out);
}

// ---- flip, roll ----

at::Tensor flip(const at::Tensor& self, at::IntArrayRef dims) {
    const c10::DeviceGuard guard(self.device());
    const auto flipped = at::dim_list_to_bitset(dims, self.dim());
    at::Tensor out = at::empty_like(self, at::MemoryFormat::Preserve);
    if (self.numel() == 0) return out;
    if (self.dim() > MTIA_TORCH_MAX_DIMS) {
        TORCH_CHECK(false, "torch_mtia: flip of more than ", MTIA_TORCH_MAX_DIMS,
                    " dims is not supported on the device");
    }
    const at::Tensor o = self.dim() == 0 ? out.view({1}) : out;
    const at::Tensor s = self.dim() == 0 ? self.view({1}) : self;
    mtiaTorchStridedCopy p = stridedCopyOver(o, s);
    // The source walked backwards along the flipped dims: its last element first, strides negated.
    int64_t start = 0;
    for (int64_t d = 0; d < self.dim(); ++d) {
        if (!flipped[d]) continue;
        start += (self.size(d) - 1) * p.src.strides[d];
        p.src.strides[d] = -p.src.strides[d];
    }
    p.src.data += static_cast<uint64_t>(start * static_cast<int64_t>(self.element_size()));
    static ModuleKernel kernel("mtia_torch_strided_copy");
    kernel.launch(p, gridFor(p.numel));
    return out;
}

at::Tensor rollOnDevice(const at::Tensor& self, at::IntArrayRef shifts, at::IntArrayRef dims) {
    const c10::DeviceGuard guard(self.device());
    TORCH_CHECK(!shifts.empty(), "`shifts` required");
    if (dims.empty() && shifts.size() == 1) {
        return rollOnDevice(self.flatten(), shifts, at::IntArrayRef{0}).view(self.sizes());
    }
    TORCH_CHECK(shifts.size() == dims.size(),
                "shifts and dimensions must align. shifts: ", shifts.size(),
                ", dims:", dims.size());
    at::Tensor result = self;
    for (size_t i = 0; i < dims.size(); ++i) {
        const int64_t dim = at::maybe_wrap_dim(dims[i], self.dim());
        const int64_t n = result.size(dim);
        if (n == 0) continue;
        const int64_t s = ((shifts[i] % n) + n) % n;
        if (s == 0) continue;
        result = at::cat({result.narrow(dim, n - s, s), result.narrow(dim, 0, n - s)}, dim);
    }
    if (result.is_same(self)) result = self.clone(at::MemoryFormat::Contiguous);
    return result.is_contiguous() ? result : result.contiguous();
}

// ---- .item() ----

// One element copied to the host on the current stream, then a wait for it: a synchronisation,
// so not legal during graph capture (as CUDA's).
c10::Scalar localScalarDense(const at::Tensor& self) {
    const c10::DeviceGuard guard(self.device());
    TORCH_CHECK(self.numel() > 0, "_local_scalar_dense: Empty tensor not supported");
    at::Tensor host = at::empty({}, self.options().device(at::kCPU));
    MTIA_CHECK(mtiaMemcpyAsync(host.data_ptr(), self.data_ptr(), self.element_size(),
                               mtiaMemcpyDeviceToHost, nullptr));
    MTIA_CHECK(mtiaStreamSynchronize(nullptr));
    return at::_local_scalar_dense(host);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, MTIA, m) {
    m.impl("cat", TORCH_FN(cat));
    m.impl("cat.out", TORCH_FN(catOut));
    m.impl("tril", TORCH_FN(tril));
    m.impl("tril_", TORCH_FN(trilInPlace));
    m.impl("tril.out", TORCH_FN(trilOut));
    m.impl("triu", TORCH_FN(triu));
    m.impl("triu_", TORCH_FN(triuInPlace));
    m.impl("triu.out", TORCH_FN(triuOut));
    m.impl("arange.start_out", TORCH_FN(arangeOut));
    m.impl("linspace.out", TORCH_FN(linspaceOut));
    m.impl("eye.out", TORCH_FN(eyeOut));
    m.impl("eye.m_out", TORCH_FN(eyeMOut));
    m.impl("flip", TORCH_FN(flip));
    m.impl("roll", TORCH_FN(rollOnDevice));
    m.impl("_local_scalar_dense", TORCH_FN(localScalarDense));
}

}  // namespace torch_mtia
