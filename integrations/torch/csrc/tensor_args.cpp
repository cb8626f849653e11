#include "tensor_args.h"

#include "allocator.h"
#include "device_kernels.h"
#include "pointwise.h"
#include "streams.h"

#include <ATen/EmptyTensor.h>

namespace torch_mtia {

bool kernelSupports(at::ScalarType type) {
    switch (type) {
    case at::kBool:
    case at::kByte:
    case at::kChar:
    case at::kShort:
    case at::kInt:
    case at::kLong:
    case at::kHalf:
    case at::kBFloat16:
    case at::kFloat:
    case at::kDouble: return true;
    default: return false;
    }
}

int32_t kernelDtype(at::ScalarType type) {
    switch (type) {
    case at::kBool: return mtiaTorchBool;
    case at::kByte: return mtiaTorchUInt8;
    case at::kChar: return mtiaTorchInt8;
    case at::kShort: return mtiaTorchInt16;
    case at::kInt: return mtiaTorchInt32;
    case at::kLong: return mtiaTorchInt64;
    case at::kHalf: return mtiaTorchFloat16;
    case at::kBFloat16: return mtiaTorchBFloat16;
    case at::kFloat: return mtiaTorchFloat32;
    case at::kDouble: return mtiaTorchFloat64;
    default:
        TORCH_CHECK(false, "torch_mtia: dtype ", type, " is not supported by the device kernels");
    }
}

mtiaTorchTensorArg tensorArg(const at::Tensor& t, at::IntArrayRef sizes) {
    mtiaTorchTensorArg arg{};
    arg.data = reinterpret_cast<uint64_t>(t.data_ptr());
    arg.dtype = kernelDtype(t.scalar_type());
    const int64_t ndim = static_cast<int64_t>(sizes.size());
    const int64_t tdim = t.dim();
    TORCH_CHECK(tdim <= ndim, "torch_mtia: operand of ", tdim, " dims does not broadcast to ",
                sizes);
    for (int64_t d = 0; d < tdim; ++d) {
        const int64_t target = ndim - tdim + d;
        const int64_t size = t.size(d);
        TORCH_CHECK(size == sizes[target] || size == 1, "torch_mtia: operand of sizes ", t.sizes(),
                    " does not broadcast to ", sizes);
        arg.strides[target] = (size == 1 && sizes[target] != 1) ? 0 : t.stride(d);
    }
    return arg;
}

void setScalar(double& f, int64_t& i, const c10::Scalar& s) {
    if (s.isIntegral(/*includeBool=*/true)) {
        i = s.toLong();
        f = static_cast<double>(i);
    } else {
        f = s.toDouble();
        i = static_cast<int64_t>(f);
    }
}

at::Tensor emptyDevice(at::IntArrayRef sizes, at::ScalarType type, c10::Device device) {
    TORCH_CHECK(device.index() < 0 || device.index() == currentDevice(),
                "torch_mtia: emptyDevice on ", device, " while the current device is ",
                int{currentDevice()});
    return at::detail::empty_generic(sizes, deviceAllocator(),
                                     c10::DispatchKeySet(c10::DispatchKey::MTIA), type,
                                     c10::MemoryFormat::Contiguous);
}

void copyOnDevice(const at::Tensor& dst, const at::Tensor& src) {
    PointwiseSpec s;
    s.op = mtiaTorchPwCopy;
    s.resultType = dst.scalar_type();  // any dtype converts, as copy_ does
    runPointwise(s, OutputKind::InPlace, dst,
                 {src.sizes() == dst.sizes() ? src : src.expand(dst.sizes())});
}

at::Tensor contiguousOnDevice(const at::Tensor& t, at::ScalarType type) {
    if (t.is_contiguous() && t.scalar_type() == type) return t;
    at::Tensor out = emptyDevice(t.sizes(), type, t.device());
    copyOnDevice(out, t);
    return out;
}

bool isDevice(const at::Tensor& t) {
    return t.device().type() == kDeviceType;
}

}  // namespace torch_mtia
