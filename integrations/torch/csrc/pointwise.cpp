#include "pointwise.h"

#include "allocator.h"
#include "device_kernels.h"
#include "streams.h"
#include "tensor_args.h"

#include <ATen/Dispatch_v2.h>
#include <ATen/EmptyTensor.h>
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/ScalarOps.h>
#include <ATen/native/Resize.h>
#include <ATen/native/TypeProperties.h>
#include <c10/core/DeviceGuard.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <numeric>

namespace torch_mtia {
namespace {

int32_t computeKind(at::ScalarType t) {
    switch (t) {
    case at::kHalf:
    case at::kBFloat16:
    case at::kFloat: return mtiaTorchComputeFloat;
    case at::kDouble: return mtiaTorchComputeDouble;
    default: return mtiaTorchComputeInt64;
    }
}

// Operand strides, in elements, over the broadcast index space: one row per operand.
using StrideRow = std::array<int64_t, MTIA_TORCH_MAX_DIMS>;

// The device all tensor operands are on (CPU scalars aside), checked as TensorIterator checks.
c10::Device commonDevice(const at::Tensor& out, const at::Tensor* const* inputs, int count) {
    std::optional<c10::Device> device;
    auto visit = [&](const at::Tensor& t) {
        if (!t.defined() || isCpuScalar(t)) return;
        if (!device) {
            device = t.device();
        } else {
            TORCH_CHECK(*device == t.device(),
                        "Expected all tensors to be on the same device, but found at least two "
                        "devices, ",
                        *device, " and ", t.device(), "!");
        }
    };
    visit(out);
    for (int k = 0; k < count; ++k) visit(*inputs[k]);
    if (!device) {  // only CPU scalars: the output decides, else the current device
        device = out.defined() ? out.device() : c10::Device(kDeviceType, currentDevice());
    }
    TORCH_CHECK(device->type() == kDeviceType, "torch_mtia: pointwise operands on ", *device);
    return *device;
}

// Broadcast strides (elements) of t over shape: 0 where t has size 1 or lacks the dim, and
// everywhere for a CPU scalar (read by value).
void broadcastStrides(const at::Tensor& t, at::IntArrayRef shape, StrideRow& strides) {
    const int64_t ndim = static_cast<int64_t>(shape.size());
    std::fill(strides.begin(), strides.begin() + ndim, 0);
    if (isCpuScalar(t)) return;
    const int64_t offset = ndim - t.dim();
    const at::IntArrayRef sizes = t.sizes();
    const at::IntArrayRef tstrides = t.strides();
    for (int64_t d = 0; d < t.dim(); ++d) {
        strides[offset + d] = (sizes[d] == 1 && shape[offset + d] != 1) ? 0 : tstrides[d];
    }
}

// The order of dims from innermost to outermost that PyTorch iterates in and lays new outputs out
// in: starting from the last dim innermost, an insertion sort by the operands' strides, the first
// operand (outputs first) with a strict order deciding; broadcast (stride 0) dims give no order;
// equal strides put the smaller dim inside.
void iterationOrder(at::IntArrayRef shape, const StrideRow* strides, const int* elementSizes,
                    int operands, int64_t* perm) {
    const int64_t ndim = static_cast<int64_t>(shape.size());
    for (int64_t k = 0; k < ndim; ++k) perm[k] = ndim - 1 - k;
    auto order = [&](int64_t d0, int64_t d1) {  // 1: d0 goes outside d1; -1: inside; 0: unknown
        for (int a = 0; a < operands; ++a) {
            const int64_t s0 = strides[a][d0] * elementSizes[a];
            const int64_t s1 = strides[a][d1] * elementSizes[a];
            if (s0 == 0 || s1 == 0) continue;
            if (s0 < s1) return -1;
            if (s0 > s1) return 1;
            if (shape[d0] > shape[d1]) return 1;
        }
        return 0;
    };
    for (int64_t i = 1; i < ndim; ++i) {
        int64_t d1 = i;
        for (int64_t d0 = i - 1; d0 >= 0; --d0) {
            const int cmp = order(perm[d0], perm[d1]);
            if (cmp > 0) {
                std::swap(perm[d0], perm[d1]);
                d1 = d0;
            } else if (cmp < 0) {
                break;
            }
        }
    }
}

// The strides of a new output over shape: dense in the order perm (innermost first).
at::DimVector denseStrides(at::IntArrayRef shape, const int64_t* perm) {
    at::DimVector strides(shape.size(), 0);
    int64_t step = 1;
    for (size_t k = 0; k < shape.size(); ++k) {
        strides[perm[k]] = step;
        step *= std::max<int64_t>(shape[perm[k]], 1);
    }
    return strides;
}

bool sameStrides(at::IntArrayRef a, at::IntArrayRef b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
}

// The value of a CPU scalar converted to type as a tensor copy converts (wrapping integers,
// rounding floats), read straight from its one element.
c10::Scalar scalarAs(const at::Tensor& t, at::ScalarType type) {
    return AT_DISPATCH_V2(
        t.scalar_type(), "torch_mtia scalar operand", AT_WRAP([&] {
            const scalar_t value = *t.const_data_ptr<scalar_t>();
            using From = scalar_t;
            return AT_DISPATCH_V2(
                type, "torch_mtia scalar operand", AT_WRAP([&] {
                    return c10::Scalar(
                        c10::static_cast_with_inter_type<scalar_t, From>::apply(value));
                }),
                AT_EXPAND(AT_ALL_TYPES), at::kHalf, at::kBFloat16, at::kBool);
        }),
        AT_EXPAND(AT_ALL_TYPES), at::kHalf, at::kBFloat16, at::kBool);
}

struct Layout {
    bool fast = false;  // a layout every operand shares (PyTorch's "fast setup")
    at::MemoryFormat format = at::MemoryFormat::Contiguous;
    const at::Tensor* like = nullptr;  // fast with Preserve: the operand whose strides it takes
};

// PyTorch's fast setup: operands of one shape that share a layout give it to the output.
Layout fastLayout(const at::Tensor* out, const at::Tensor* const* inputs, int count, bool sameShape,
                  int64_t ndim) {
    Layout layout;
    if (!sameShape) return layout;
    const at::Tensor* laid[1 + MTIA_TORCH_POINTWISE_MAX_INPUTS];
    int n = 0;
    if (out != nullptr) laid[n++] = out;
    for (int k = 0; k < count; ++k) {
        if (ndim > 0 && isCpuScalar(*inputs[k])) return layout;
        laid[n++] = inputs[k];
    }
    if (n == 0) return layout;
    bool contiguous = true, channelsLast = true, channelsLast3d = true, dense = true;
    for (int k = 0; k < n; ++k) {
        const at::Tensor& t = *laid[k];
        contiguous = contiguous && t.is_contiguous(at::MemoryFormat::Contiguous);
        channelsLast = channelsLast && t.is_contiguous(at::MemoryFormat::ChannelsLast);
        channelsLast3d = channelsLast3d && t.is_contiguous(at::MemoryFormat::ChannelsLast3d);
        dense = dense && t.is_non_overlapping_and_dense();
    }
    if (contiguous) {
        layout.fast = true;
    } else if (channelsLast) {
        layout.fast = true;
        layout.format = at::MemoryFormat::ChannelsLast;
    } else if (channelsLast3d) {
        layout.fast = true;
        layout.format = at::MemoryFormat::ChannelsLast3d;
    } else if (dense) {
        bool equal = true;
        for (int k = 0; k < n; ++k)
            equal = equal && sameStrides(laid[k]->strides(), laid[n - 1]->strides());
        if (equal) {
            layout.fast = true;
            layout.format = at::MemoryFormat::Preserve;
            layout.like = laid[n - 1];
        }
    }
    return layout;
}

at::Tensor emptyLike(at::IntArrayRef shape, at::IntArrayRef strides, at::ScalarType type) {
    return at::detail::empty_strided_generic(shape, strides, deviceAllocator(),
                                             c10::DispatchKeySet(c10::DispatchKey::MTIA), type);
}

}  // namespace

bool isCpuScalar(const at::Tensor& t) {
    return t.defined() && t.dim() == 0 && t.device().is_cpu();
}

at::Tensor wrapScalar(const c10::Scalar& s) {
    at::Tensor t = at::scalar_to_tensor(s);
    t.unsafeGetTensorImpl()->set_wrapped_number(true);
    return t;
}

at::ScalarType commonType(TensorRefs inputs, int from) {
    at::native::ResultTypeState state{};
    int k = 0;
    for (const TensorRef& t : inputs) {
        if (k++ < from || !t->defined()) continue;
        state = at::native::update_result_type_state(*t, state);
    }
    return at::native::result_type(state);
}

void runInto(const PointwiseSpec& spec, at::Tensor& out, TensorRefs inputs) {
    if (out.defined()) {
        runPointwise(spec, OutputKind::Given, out, inputs);
    } else {
        out = runPointwise(spec, OutputKind::Allocate, out, inputs);
    }
}

at::Tensor runPointwise(const PointwiseSpec& spec, OutputKind kind, const at::Tensor& outArg,
                        TensorRefs inputs) {
    TORCH_CHECK(inputs.size() <= MTIA_TORCH_POINTWISE_MAX_INPUTS, "torch_mtia: too many inputs");
    const int nin = static_cast<int>(inputs.size());
    const at::Tensor* in[MTIA_TORCH_POINTWISE_MAX_INPUTS] = {};
    {
        int k = 0;
        for (const TensorRef& t : inputs) in[k++] = t.get();
    }
    const c10::Device device = commonDevice(outArg, in, nin);
    const c10::DeviceGuard guard(device);
    at::ScalarType common =
        nin > spec.promoteFrom ? commonType(inputs, spec.promoteFrom) : at::kFloat;
    if (spec.op == mtiaTorchPwFill && kind != OutputKind::Allocate) common = outArg.scalar_type();
    if (spec.integerToFloat && at::isIntegralType(common, /*includeBool=*/true)) {
        common = c10::typeMetaToScalarType(c10::get_default_dtype());
    }
    const at::ScalarType resultType = spec.resultType.value_or(common);
    TORCH_CHECK(kernelSupports(common), "torch_mtia: dtype ", common,
                " is not supported by the device kernels");

    // The broadcast shape of the inputs (outputs do not take part unless in place).
    at::DimVector shape;
    bool sameShape = true;
    for (int k = 0; k < nin; ++k) {
        if (k == 0) {
            shape.assign(in[0]->sizes().begin(), in[0]->sizes().end());
        } else if (!sameStrides(in[k]->sizes(), shape)) {
            sameShape = false;
            shape = at::infer_size_dimvector(shape, in[k]->sizes());
        }
    }
    if (nin == 0) shape.assign(outArg.sizes().begin(), outArg.sizes().end());  // fill

    bool allocate = kind == OutputKind::Allocate;
    if (kind == OutputKind::InPlace) {
        TORCH_CHECK(sameStrides(outArg.sizes(), shape), "output with shape ", outArg.sizes(),
                    " doesn't match the broadcast shape ", at::IntArrayRef(shape));
    }
    if (kind != OutputKind::Allocate) {
        TORCH_CHECK(isDevice(outArg), "torch_mtia: the output is on ", outArg.device());
        TORCH_CHECK(spec.resultType.has_value() || at::canCast(common, outArg.scalar_type()),
                    "result type ", common, " can't be cast to the desired output type ",
                    outArg.scalar_type());
        TORCH_CHECK(kernelSupports(outArg.scalar_type()), "torch_mtia: dtype ",
                    outArg.scalar_type(), " is not supported by the device kernels");
    }
    if (kind == OutputKind::Given && !sameStrides(outArg.sizes(), shape)) {
        at::native::resize_output(outArg, shape);  // warns when a non-empty out= is resized
        allocate = true;                           // and lays it out as a new output
    }
    const int64_t ndim = static_cast<int64_t>(shape.size());
    TORCH_CHECK(ndim <= MTIA_TORCH_MAX_DIMS, "torch_mtia: tensors of more than ",
                MTIA_TORCH_MAX_DIMS, " dims are not supported by the device kernels");

    // Row 0: the output (filled in once it exists); rows 1..: the inputs.
    StrideRow strides[1 + MTIA_TORCH_POINTWISE_MAX_INPUTS];
    int sizes[1 + MTIA_TORCH_POINTWISE_MAX_INPUTS];
    for (int k = 0; k < nin; ++k) {
        broadcastStrides(*in[k], shape, strides[1 + k]);
        sizes[1 + k] = static_cast<int>(in[k]->element_size());
    }
    at::Tensor fresh;
    const at::Tensor* out = &outArg;
    if (allocate) {
        const Layout layout = fastLayout(nullptr, in, nin, sameShape, ndim);
        // A new output takes no part in ordering the dims: the inputs decide.
        int64_t perm[MTIA_TORCH_MAX_DIMS];
        if (layout.fast && layout.format == at::MemoryFormat::Preserve) {
            fresh = emptyLike(shape, layout.like->strides(), resultType);
        } else if (layout.fast) {
            fresh = at::detail::empty_generic(shape, deviceAllocator(),
                                              c10::DispatchKeySet(c10::DispatchKey::MTIA),
                                              resultType, layout.format);
        } else {
            iterationOrder(shape, strides + 1, sizes + 1, nin, perm);
            fresh = emptyLike(shape, denseStrides(shape, perm), resultType);
        }
        if (outArg.defined()) {  // out= resized: takes the new layout in place
            outArg.as_strided_(fresh.sizes(), fresh.strides());
        } else {
            out = &fresh;
        }
    } else {
        at::assert_no_internal_overlap(outArg);
        for (int k = 0; k < nin; ++k) {
            if (!isCpuScalar(*in[k])) at::assert_no_partial_overlap(outArg, *in[k]);
        }
    }
    if (out->numel() == 0) return fresh;
    broadcastStrides(*out, shape, strides[0]);
    sizes[0] = static_cast<int>(out->element_size());
    int64_t perm[MTIA_TORCH_MAX_DIMS];
    iterationOrder(shape, strides, sizes, 1 + nin, perm);

    mtiaTorchPointwise p{};
    p.op = spec.op;
    p.compute = computeKind(common);
    p.ninputs = nin;
    std::copy(std::begin(spec.f), std::end(spec.f), p.f);
    std::copy(std::begin(spec.i), std::end(spec.i), p.i);
    // Dims in iteration order (innermost first), size-1 dims dropped, neighbours merged where every
    // operand steps through them as through one.
    int32_t nd = 0;
    for (int64_t k = 0; k < ndim; ++k) {
        const int64_t d = perm[k];
        if (shape[d] == 1) continue;
        bool merge = nd > 0;
        for (int a = 0; merge && a <= nin; ++a) {
            const mtiaTorchOperand& o = a == 0 ? p.out : p.in[a - 1];
            merge = strides[a][d] == o.strides[nd - 1] * p.sizes[nd - 1];
        }
        if (merge) {
            p.sizes[nd - 1] *= shape[d];
            continue;
        }
        p.sizes[nd] = shape[d];
        for (int a = 0; a <= nin; ++a) {
            mtiaTorchOperand& o = a == 0 ? p.out : p.in[a - 1];
            o.strides[nd] = strides[a][d];
        }
        ++nd;
    }
    p.ndim = nd;
    p.numel = static_cast<uint64_t>(out->numel());
    p.out.data = reinterpret_cast<uint64_t>(out->data_ptr());
    p.out.dtype = kernelDtype(out->scalar_type());
    for (int k = 0; k < nin; ++k) {
        const at::Tensor& t = *in[k];
        mtiaTorchOperand& o = p.in[k];
        if (isCpuScalar(t)) {
            // By value. Rounded to the computation's dtype first, as the CPU casts its inputs,
            // unless the op reads a right-hand scalar in float.
            const bool keep =
                spec.rightScalarInOpMath && k == nin - 1 && at::isReducedFloatingType(common);
            const at::ScalarType as =
                keep ? at::kFloat : (k < spec.promoteFrom ? t.scalar_type() : common);
            const c10::Scalar v = scalarAs(t, as);
            o.immediate = 1;
            if (v.isIntegral(/*includeBool=*/true)) {
                o.ivalue = v.toLong();
                o.fvalue = static_cast<double>(o.ivalue);
                o.dtype = mtiaTorchInt64;
            } else {
                o.fvalue = v.toDouble();
                o.ivalue = at::isFloatingType(as) ? 0 : static_cast<int64_t>(o.fvalue);
                o.dtype = mtiaTorchFloat64;
            }
            continue;
        }
        TORCH_CHECK(kernelSupports(t.scalar_type()), "torch_mtia: dtype ", t.scalar_type(),
                    " is not supported by the device kernels");
        o.data = reinterpret_cast<uint64_t>(t.data_ptr());
        o.dtype = kernelDtype(t.scalar_type());
    }
    if (PointwiseBatch* batch = PointwiseBatch::active(); batch != nullptr && batch->hold(p)) {
        return fresh;
    }
    static ModuleKernel kernel("mtia_torch_pointwise");
    kernel.launch(p, gridFor(p.numel));
    return fresh;
}

namespace {

thread_local PointwiseBatch* tBatch = nullptr;

constexpr uint64_t kDtypeBytes[] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8};  // by mtiaTorchDtype

mtiaTorchFlatOperand flatten(const mtiaTorchOperand& op) {
    mtiaTorchFlatOperand flat{};
    flat.data = op.data;
    flat.dtype = op.dtype;
    flat.immediate = op.immediate;
    flat.fvalue = op.fvalue;
    flat.ivalue = op.ivalue;
    flat.stride = op.strides[0];
    return flat;
}

}  // namespace

PointwiseBatch::PointwiseBatch() {
    if (tBatch != nullptr) return;  // nested: the outer batch holds
    active_ = true;
    previous_ = heldLaunches();
    if (previous_ != nullptr) previous_->release();  // whatever else was held goes first
    tBatch = this;
    setHeldLaunches(this);
}

PointwiseBatch::~PointwiseBatch() {
    if (!active_) return;
    try {
        release();
    } catch (...) {  // NOLINT(bugprone-empty-catch): only reached while another error unwinds
    }
    tBatch = nullptr;
    setHeldLaunches(previous_);
}

void PointwiseBatch::finish() {
    if (!active_) return;
    release();
}

PointwiseBatch* PointwiseBatch::active() {
    return tBatch;
}

void PointwiseBatch::release() {
    if (batch_.count == 0) return;
    uint64_t work = 0;
    for (int k = 0; k < batch_.count; ++k) work += batch_.items[k].numel;
    const int32_t count = batch_.count;
    batch_.count = 0;  // emptied before launching: a failed launch is not retried
    nread_ = 0;
    mtiaTorchPointwiseBatch params;
    std::memcpy(&params, &batch_, sizeof params);
    params.count = count;
    setHeldLaunches(nullptr);  // the batch's own launch goes straight out
    try {
        static ModuleKernel kernel("mtia_torch_pointwise_batch");
        kernel.launch(params, gridFor(work));
    } catch (...) {
        setHeldLaunches(this);
        throw;
    }
    setHeldLaunches(this);
}

bool PointwiseBatch::touchesHeld(const Span* outs, int nouts, const Span* ins, int nins) const {
    auto overlaps = [](const Span& a, const Span& b) { return a.begin < b.end && b.begin < a.end; };
    for (int h = 0; h < batch_.count; ++h) {
        for (int k = 0; k < nouts; ++k) {
            if (overlaps(outs[k], written_[h])) return true;
        }
        for (int k = 0; k < nins; ++k) {
            if (overlaps(ins[k], written_[h])) return true;
        }
    }
    for (int r = 0; r < nread_; ++r) {
        for (int k = 0; k < nouts; ++k) {
            if (overlaps(outs[k], read_[r])) return true;
        }
    }
    return false;
}

bool PointwiseBatch::hold(const mtiaTorchPointwise& p) {
    if (!active_ || p.ndim > 1) return false;
    auto span = [&](const mtiaTorchOperand& op) {
        const uint64_t bytes = kDtypeBytes[op.dtype];
        const uint64_t last =
            p.ndim == 0 ? 0 : (p.numel - 1) * static_cast<uint64_t>(op.strides[0]);
        return Span{op.data, op.data + (last + 1) * bytes};
    };
    const Span out = span(p.out);
    Span ins[MTIA_TORCH_POINTWISE_MAX_INPUTS];
    int nins = 0;
    for (int k = 0; k < p.ninputs; ++k) {
        if (p.in[k].immediate == 0) ins[nins++] = span(p.in[k]);
    }
    if (batch_.count == MTIA_TORCH_POINTWISE_BATCH_MAX || touchesHeld(&out, 1, ins, nins))
        release();
    mtiaTorchFlatPointwise& item = batch_.items[batch_.count];
    item.op = p.op;
    item.compute = p.compute;
    item.ndim = p.ndim;
    item.ninputs = p.ninputs;
    item.numel = p.numel;
    std::memcpy(item.f, p.f, sizeof item.f);
    std::memcpy(item.i, p.i, sizeof item.i);
    item.out = flatten(p.out);
    for (int k = 0; k < p.ninputs; ++k) item.in[k] = flatten(p.in[k]);
    written_[batch_.count] = out;
    for (int k = 0; k < nins; ++k) read_[nread_++] = ins[k];
    ++batch_.count;
    return true;
}

}  // namespace torch_mtia
