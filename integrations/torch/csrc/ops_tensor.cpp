// MTIA kernels that make and move tensors: empty, empty_strided, copies in every direction,
// fill_, zero_, the view kernels, resize_, and the CPU fallback for every other operator. Device
// work goes through the C ABI on the current stream of the tensor's device, so it is ordered with
// the kernels launched there.
#include "allocator.h"
#include "device_kernels.h"
#include "fallback_counts.h"
#include "mtia_check.h"
#include "streams.h"
#include "tensor_args.h"

#include <ATen/EmptyTensor.h>
#include <ATen/Functions.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/view_native.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/SymIntArrayRef.h>
#include <torch/library.h>

namespace torch_mtia {
namespace {

c10::Device targetDevice(c10::optional<c10::Device> device) {
    c10::Device d = device.value_or(c10::Device(kDeviceType));
    TORCH_CHECK(d.type() == kDeviceType, "torch_mtia: expected an MTIA device, got ", d);
    return d.has_index() ? d : c10::Device(kDeviceType, currentDevice());
}

at::Tensor empty(c10::SymIntArrayRef size, c10::optional<at::ScalarType> dtype,
                 c10::optional<at::Layout> layout, c10::optional<c10::Device> device,
                 c10::optional<bool> pinMemory, c10::optional<c10::MemoryFormat> memoryFormat) {
    TORCH_CHECK(layout.value_or(at::kStrided) == at::kStrided,
                "torch_mtia: only strided tensors are supported");
    TORCH_CHECK(!pinMemory.value_or(false), "torch_mtia: pin_memory applies to CPU tensors only");
    const c10::Device d = targetDevice(device);
    const c10::DeviceGuard guard(d);
    return at::detail::empty_generic(C10_AS_INTARRAYREF_SLOW(size), deviceAllocator(),
                                     c10::DispatchKeySet(c10::DispatchKey::MTIA),
                                     c10::dtype_or_default(dtype), memoryFormat);
}

at::Tensor emptyStrided(c10::SymIntArrayRef size, c10::SymIntArrayRef stride,
                        c10::optional<at::ScalarType> dtype, c10::optional<at::Layout> layout,
                        c10::optional<c10::Device> device, c10::optional<bool> pinMemory) {
    TORCH_CHECK(layout.value_or(at::kStrided) == at::kStrided,
                "torch_mtia: only strided tensors are supported");
    TORCH_CHECK(!pinMemory.value_or(false), "torch_mtia: pin_memory applies to CPU tensors only");
    const c10::Device d = targetDevice(device);
    const c10::DeviceGuard guard(d);
    return at::detail::empty_strided_generic(
        C10_AS_INTARRAYREF_SLOW(size), C10_AS_INTARRAYREF_SLOW(stride), deviceAllocator(),
        c10::DispatchKeySet(c10::DispatchKey::MTIA), c10::dtype_or_default(dtype));
}

size_t byteCount(const at::Tensor& t) {
    return static_cast<size_t>(t.numel()) * t.element_size();
}

// The bytes of a contiguous CPU tensor into a contiguous device tensor of the same dtype, on the
// current stream. From pageable memory it returns once copied; from pinned memory at once
// (non_blocking).
void hostToDevice(const at::Tensor& dst, const at::Tensor& src) {
    MTIA_CHECK(mtiaMemcpyAsync(dst.data_ptr(), src.data_ptr(), byteCount(src),
                               mtiaMemcpyHostToDevice, nullptr));
}

void deviceToHost(const at::Tensor& dst, const at::Tensor& src, bool nonBlocking) {
    MTIA_CHECK(mtiaMemcpyAsync(dst.data_ptr(), src.data_ptr(), byteCount(src),
                               mtiaMemcpyDeviceToHost, nullptr));
    // Pageable destinations are complete already; pinned ones only when the stream gets there.
    if (!nonBlocking) MTIA_CHECK(mtiaStreamSynchronize(nullptr));
}

bool sameLayout(const at::Tensor& a, const at::Tensor& b) {
    return a.scalar_type() == b.scalar_type() && a.is_contiguous() && b.is_contiguous();
}

// Whether a and b are the same elements (a copy between them changes nothing).
bool sameElements(const at::Tensor& a, const at::Tensor& b) {
    return a.is_alias_of(b) && a.storage_offset() == b.storage_offset() && a.sizes() == b.sizes() &&
           a.strides() == b.strides() && a.scalar_type() == b.scalar_type();
}

// PyTorch's copy_ hands copies with a device it has no copy kernel for (MTIA) to _copy_from before
// its own broadcasting and overlap checks, so they are done here: the source is broadcast to the
// destination's shape, and a destination whose elements overlap each other or partly overlap the
// source is refused, as the CPU refuses it.
at::Tensor copyFrom(const at::Tensor& from, const at::Tensor& dst, bool nonBlocking) {
    const at::Tensor self = from.sizes() == dst.sizes() ? from : from.expand(dst.sizes());
    if (self.numel() == 0 || sameElements(self, dst)) return dst;
    at::assert_no_internal_overlap(dst);
    at::assert_no_partial_overlap(dst, self);
    const bool fromDevice = isDevice(self);
    const bool toDevice = isDevice(dst);
    if (fromDevice && toDevice && self.device() != dst.device()) {
        // Between devices through the host: correct, ordered after both devices' current streams.
        at::Tensor staged = self.to(at::kCPU);
        dst.copy_(staged);
        return dst;
    }
    if (fromDevice && toDevice) {
        const c10::DeviceGuard guard(dst.device());
        if (sameLayout(self, dst)) {
            MTIA_CHECK(mtiaMemcpyAsync(dst.data_ptr(), self.data_ptr(), byteCount(dst),
                                       mtiaMemcpyDeviceToDevice, nullptr));
        } else {
            copyOnDevice(dst, self);
        }
        return dst;
    }
    if (toDevice) {  // host to device
        TORCH_CHECK(self.device().is_cpu(), "torch_mtia: cannot copy from ", self.device());
        const c10::DeviceGuard guard(dst.device());
        const at::Tensor source = self.to(dst.scalar_type()).contiguous();
        if (dst.is_contiguous()) {
            hostToDevice(dst, source);
        } else {
            at::Tensor staged = emptyDevice(dst.sizes(), dst.scalar_type(), dst.device());
            hostToDevice(staged, source);
            copyOnDevice(dst, staged);
        }
        return dst;
    }
    // device to host
    TORCH_CHECK(dst.device().is_cpu(), "torch_mtia: cannot copy to ", dst.device());
    const c10::DeviceGuard guard(self.device());
    if (sameLayout(self, dst)) {
        deviceToHost(dst, self, nonBlocking);
        return dst;
    }
    const at::Tensor source = kernelSupports(dst.scalar_type())
                                  ? contiguousOnDevice(self, dst.scalar_type())
                                  : contiguousOnDevice(self, self.scalar_type());
    at::Tensor host = at::empty(dst.sizes(), dst.options().dtype(source.scalar_type()));
    deviceToHost(host, source, /*nonBlocking=*/false);
    dst.copy_(host);
    return dst;
}

at::Tensor copyFromAndResize(const at::Tensor& self, const at::Tensor& dst) {
    if (dst.sizes() != self.sizes()) dst.resize_(self.sizes());
    return copyFrom(self, dst, false);
}

at::Tensor asStrided(const at::Tensor& self, c10::SymIntArrayRef size, c10::SymIntArrayRef stride,
                     c10::optional<c10::SymInt> storageOffset) {
    c10::optional<int64_t> offset;
    if (storageOffset) offset = storageOffset->expect_int();
    return at::native::as_strided_tensorimpl(self, C10_AS_INTARRAYREF_SLOW(size),
                                             C10_AS_INTARRAYREF_SLOW(stride), offset);
}

at::Tensor view(const at::Tensor& self, c10::SymIntArrayRef size) {
    return at::native::view(self, C10_AS_INTARRAYREF_SLOW(size));
}

at::Tensor reshapeAlias(const at::Tensor& self, c10::SymIntArrayRef size,
                        c10::SymIntArrayRef stride) {
    return at::native::_reshape_alias(self, C10_AS_INTARRAYREF_SLOW(size),
                                      C10_AS_INTARRAYREF_SLOW(stride));
}

// Grows the storage through our allocator, copying the old bytes on the current stream (a host
// memcpy, as the CPU resize does, would ignore stream order). As the CPU: a tensor resized to its
// own sizes keeps its strides; a new size makes it contiguous; a memory format given restrides it.
const at::Tensor& resize(const at::Tensor& self, c10::SymIntArrayRef symSize,
                         c10::optional<c10::MemoryFormat> memoryFormat) {
    const at::IntArrayRef size = C10_AS_INTARRAYREF_SLOW(symSize);
    const c10::DeviceGuard guard(self.device());
    auto* impl = self.unsafeGetTensorImpl();
    TORCH_CHECK(memoryFormat.value_or(c10::MemoryFormat::Contiguous) != c10::MemoryFormat::Preserve,
                "torch_mtia: resize_ does not support Preserve");
    for (int64_t s : size) TORCH_CHECK(s >= 0, "torch_mtia: resize_ to negative size ", size);
    if (self.sizes() != size) {
        int64_t numel = 1;
        for (int64_t s : size) numel *= s;
        const size_t needed =
            static_cast<size_t>(numel + impl->storage_offset()) * self.element_size();
        c10::StorageImpl* storage = impl->storage().unsafeGetStorageImpl();
        if (numel > 0 && needed > storage->nbytes()) {
            TORCH_CHECK(storage->resizable(),
                        "torch_mtia: resize_ of a storage that is not resizable");
            c10::DataPtr grown = deviceAllocator()->allocate(needed);
            if (storage->nbytes() != 0) {
                MTIA_CHECK(mtiaMemcpyAsync(grown.get(), storage->data(), storage->nbytes(),
                                           mtiaMemcpyDeviceToDevice, nullptr));
                // The copy reads the old block on the current stream, which need not be the stream
                // it was allocated on: dropping it below must not let that stream reuse it before
                // the copy ran.
                MTIA_CHECK(mtiaRecordStream(storage->mutable_data(), nullptr));
            }
            storage->set_data_ptr_noswap(std::move(grown));
            storage->set_nbytes(needed);
        }
        impl->set_sizes_contiguous(size);
    }
    if (memoryFormat) impl->empty_tensor_restride(*memoryFormat);
    return self;
}

at::Tensor& zero(at::Tensor& self) {
    if (self.numel() == 0) return self;
    const c10::DeviceGuard guard(self.device());
    if (self.is_contiguous()) {
        MTIA_CHECK(mtiaMemsetAsync(self.data_ptr(), 0, byteCount(self), nullptr));
        return self;
    }
    return self.fill_(0);
}

// The zero tensor autograd formulas make for gradients known to be zero (sgn's, for instance): a
// tensor of zeros on the device. (The CPU's is a storage-less ZeroTensor; the values are the same,
// and every operator handles a plain tensor.)
at::Tensor efficientZeroTensor(c10::SymIntArrayRef size, c10::optional<at::ScalarType> dtype,
                               c10::optional<at::Layout> layout, c10::optional<c10::Device> device,
                               c10::optional<bool> pinMemory) {
    at::Tensor out = empty(size, dtype, layout, device, pinMemory, c10::nullopt);
    return out.zero_();
}

// Tensor.record_stream: the storage is not reused after its free until stream's work queued before
// the free has finished.
void recordStream(at::Tensor& self, c10::Stream s) {
    void* base = self.storage().data_ptr().get();
    if (base == nullptr) return;
    MTIA_CHECK(mtiaRecordStream(base, streamHandle(s)));
}

// Every operator without an MTIA kernel: its device arguments are copied to the host (after
// the work queued on their device's current stream, through copyFrom), run on the CPU, and the
// results copied back. Each run is counted (fallback_counts.h).
void cpuFallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
    const c10::OperatorName& name = op.operator_name();
    const std::string full =
        name.overload_name.empty() ? name.name : name.name + "." + name.overload_name;
    // The fallback copies to the host and waits for the device, which a capture cannot record: say
    // so, naming the operator, before anything is queued (the capture itself stays valid).
    mtiaStreamCaptureStatus status = mtiaStreamCaptureStatusNone;
    if (mtiaStreamIsCapturing(nullptr, &status) == mtiaSuccess &&
        status != mtiaStreamCaptureStatusNone) {
        TORCH_CHECK(false, "torch_mtia: ", full,
                    " has no MTIA device kernel; it would run through the CPU fallback, which "
                    "copies to the host and synchronises, and cannot be captured in a graph "
                    "(torch_mtia.device_operators() lists the operators with device kernels)");
    }
    countFallback(full);
    at::native::cpu_fallback(op, stack);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, MTIA, m) {
    m.impl("empty.memory_format", TORCH_FN(empty));
    m.impl("empty_strided", TORCH_FN(emptyStrided));
    m.impl("_copy_from", TORCH_FN(copyFrom));
    m.impl("_copy_from_and_resize", TORCH_FN(copyFromAndResize));
    m.impl("as_strided", TORCH_FN(asStrided));
    m.impl("view", TORCH_FN(view));
    m.impl("_reshape_alias", TORCH_FN(reshapeAlias));
    m.impl("resize_", TORCH_FN(resize));
    m.impl("zero_", TORCH_FN(zero));
    m.impl("record_stream", TORCH_FN(recordStream));
    m.impl("_efficientzerotensor", TORCH_FN(efficientZeroTensor));
}

TORCH_LIBRARY_IMPL(_, MTIA, m) {
    m.fallback(torch::CppFunction::makeFromBoxedFunction<&cpuFallback>());
}

}  // namespace torch_mtia
