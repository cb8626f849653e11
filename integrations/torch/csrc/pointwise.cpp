#include "pointwise.h"

#include "device_kernels.h"
#include "streams.h"
#include "tensor_args.h"

#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/ScalarOps.h>
#include <ATen/native/Resize.h>
#include <ATen/native/TypeProperties.h>
#include <c10/core/DeviceGuard.h>

#include <algorithm>
#include <numeric>

namespace torch_mtia {
namespace {

constexpr int kMaxOperands = 1 + MTIA_TORCH_POINTWISE_MAX_INPUTS;

int32_t computeKind(at::ScalarType t) {
    switch (t) {
    case at::kHalf:
    case at::kBFloat16:
    case at::kFloat: return mtiaTorchComputeFloat;
    case at::kDouble: return mtiaTorchComputeDouble;
    default: return mtiaTorchComputeInt64;
    }
}

// The device all tensor operands are on (CPU scalars aside), checked as TensorIterator checks.
c10::Device commonDevice(const at::Tensor& out, std::initializer_list<at::Tensor> inputs) {
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
    for (const at::Tensor& t : inputs) visit(t);
    if (!device) {  // only CPU scalars: the output decides, else the current device
        device = out.defined() ? out.device() : c10::Device(kDeviceType, currentDevice());
    }
    TORCH_CHECK(device->type() == kDeviceType, "torch_mtia: pointwise operands on ", *device);
    return *device;
}

// Broadcast strides (elements) of t over shape: 0 where t has size 1 or lacks the dim.
std::vector<int64_t> broadcastStrides(const at::Tensor& t, at::IntArrayRef shape) {
    const int64_t ndim = static_cast<int64_t>(shape.size());
    std::vector<int64_t> strides(ndim, 0);
    const int64_t offset = ndim - t.dim();
    for (int64_t d = 0; d < t.dim(); ++d) {
        strides[offset + d] = (t.size(d) == 1 && shape[offset + d] != 1) ? 0 : t.stride(d);
    }
    return strides;
}

// The order of dims from innermost to outermost that PyTorch iterates in and lays new outputs out
// in: starting from the last dim innermost, an insertion sort by the operands' strides, the first
// operand (outputs first) with a strict order deciding; broadcast (stride 0) dims give no order;
// equal strides put the smaller dim inside.
std::vector<int64_t> iterationOrder(at::IntArrayRef shape,
                                    const std::vector<std::vector<int64_t>>& strides,
                                    const std::vector<int>& elementSizes) {
    const int64_t ndim = static_cast<int64_t>(shape.size());
    std::vector<int64_t> perm(ndim);
    for (int64_t k = 0; k < ndim; ++k) perm[k] = ndim - 1 - k;
    auto order = [&](int64_t d0, int64_t d1) {  // 1: d0 goes outside d1; -1: inside; 0: unknown
        for (size_t a = 0; a < strides.size(); ++a) {
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
    return perm;
}

// The strides of a new output over shape: dense in the order perm (innermost first).
std::vector<int64_t> denseStrides(at::IntArrayRef shape, const std::vector<int64_t>& perm) {
    std::vector<int64_t> strides(shape.size(), 0);
    int64_t step = 1;
    for (int64_t d : perm) {
        strides[d] = step;
        step *= std::max<int64_t>(shape[d], 1);
    }
    return strides;
}

bool sameStrides(at::IntArrayRef a, at::IntArrayRef b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
}

struct Layout {
    bool fast = false;  // a layout every operand shares (PyTorch's "fast setup")
    at::MemoryFormat format = at::MemoryFormat::Contiguous;
    std::vector<int64_t> strides;  // when !fast: the new output's strides
};

}  // namespace

bool isCpuScalar(const at::Tensor& t) {
    return t.defined() && t.device().is_cpu() && t.dim() == 0;
}

at::Tensor wrapScalar(const c10::Scalar& s) {
    at::Tensor t = at::scalar_to_tensor(s);
    t.unsafeGetTensorImpl()->set_wrapped_number(true);
    return t;
}

at::ScalarType commonType(std::initializer_list<at::Tensor> inputs, int from) {
    at::native::ResultTypeState state{};
    int k = 0;
    for (const at::Tensor& t : inputs) {
        if (k++ < from || !t.defined()) continue;
        state = at::native::update_result_type_state(t, state);
    }
    return at::native::result_type(state);
}

at::Tensor runPointwise(const PointwiseSpec& spec, OutputKind kind, const at::Tensor& outArg,
                        std::initializer_list<at::Tensor> inputs) {
    TORCH_CHECK(inputs.size() <= MTIA_TORCH_POINTWISE_MAX_INPUTS, "torch_mtia: too many inputs");
    const c10::Device device = commonDevice(outArg, inputs);
    const c10::DeviceGuard guard(device);
    at::ScalarType common = inputs.size() > static_cast<size_t>(spec.promoteFrom)
                                ? commonType(inputs, spec.promoteFrom)
                                : at::kFloat;
    if (spec.op == mtiaTorchPwFill && kind != OutputKind::Allocate) common = outArg.scalar_type();
    if (spec.integerToFloat && at::isIntegralType(common, /*includeBool=*/true)) {
        common = c10::typeMetaToScalarType(c10::get_default_dtype());
    }
    const at::ScalarType resultType = spec.resultType.value_or(common);
    TORCH_CHECK(kernelSupports(common), "torch_mtia: dtype ", common,
                " is not supported by the device kernels");

    // The broadcast shape of the inputs (outputs do not take part unless in place).
    std::vector<int64_t> shape;
    bool sameShape = true;
    bool first = true;
    for (const at::Tensor& t : inputs) {
        if (!first && !sameStrides(t.sizes(), shape)) sameShape = false;
        shape = first ? t.sizes().vec() : at::infer_size(shape, t.sizes());
        first = false;
    }
    if (first) shape = outArg.sizes().vec();  // fill: the output's own shape

    at::Tensor out = outArg;
    bool allocate = kind == OutputKind::Allocate;
    if (kind == OutputKind::InPlace) {
        TORCH_CHECK(sameStrides(out.sizes(), shape), "output with shape ", out.sizes(),
                    " doesn't match the broadcast shape ", at::IntArrayRef(shape));
    }
    if (kind != OutputKind::Allocate) {
        TORCH_CHECK(isDevice(out), "torch_mtia: the output is on ", out.device());
        TORCH_CHECK(spec.resultType.has_value() || at::canCast(common, out.scalar_type()),
                    "result type ", common, " can't be cast to the desired output type ",
                    out.scalar_type());
        TORCH_CHECK(kernelSupports(out.scalar_type()), "torch_mtia: dtype ", out.scalar_type(),
                    " is not supported by the device kernels");
    }
    if (kind == OutputKind::Given && !sameStrides(out.sizes(), shape)) {
        at::native::resize_output(out, shape);  // warns when a non-empty out= is resized
        allocate = true;                        // and lays it out as a new output
    }

    // Operands: the output first (when it keeps its layout), then the inputs.
    std::vector<at::Tensor> operands;
    operands.reserve(kMaxOperands);
    for (const at::Tensor& t : inputs) operands.push_back(t);
    const int64_t ndim = static_cast<int64_t>(shape.size());
    TORCH_CHECK(ndim <= MTIA_TORCH_MAX_DIMS, "torch_mtia: tensors of more than ",
                MTIA_TORCH_MAX_DIMS, " dims are not supported by the device kernels");

    Layout layout;
    {
        // PyTorch's fast setup: operands of one shape that share a layout give it to the output.
        std::vector<const at::Tensor*> laid;
        if (!allocate) laid.push_back(&out);
        bool anyCpuScalar = false;
        for (const at::Tensor& t : operands) {
            if (isCpuScalar(t) && ndim > 0) anyCpuScalar = true;
            laid.push_back(&t);
        }
        if (sameShape && !anyCpuScalar && !laid.empty()) {
            bool contiguous = true, channelsLast = true, channelsLast3d = true, dense = true;
            for (const at::Tensor* t : laid) {
                contiguous &= t->is_contiguous(at::MemoryFormat::Contiguous);
                channelsLast &= t->is_contiguous(at::MemoryFormat::ChannelsLast);
                channelsLast3d &= t->is_contiguous(at::MemoryFormat::ChannelsLast3d);
                dense &= t->is_non_overlapping_and_dense();
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
                for (const at::Tensor* t : laid)
                    equal &= sameStrides(t->strides(), laid.back()->strides());
                if (equal) {
                    layout.fast = true;
                    layout.format = at::MemoryFormat::Preserve;
                    layout.strides = laid.back()->strides().vec();
                }
            }
        }
    }
    std::vector<std::vector<int64_t>> strides;
    std::vector<int> sizes;
    if (!allocate) {
        strides.push_back(broadcastStrides(out, shape));
        sizes.push_back(static_cast<int>(out.element_size()));
    }
    for (const at::Tensor& t : operands) {
        strides.push_back(isCpuScalar(t) ? std::vector<int64_t>(ndim, 0)
                                         : broadcastStrides(t, shape));
        sizes.push_back(static_cast<int>(t.element_size()));
    }
    const std::vector<int64_t> perm = iterationOrder(shape, strides, sizes);

    if (allocate) {
        at::Tensor fresh;
        if (layout.fast && layout.format == at::MemoryFormat::Preserve) {
            fresh = at::empty_strided(shape, layout.strides,
                                      at::TensorOptions().dtype(resultType).device(device));
        } else if (layout.fast) {
            fresh = at::empty(shape, at::TensorOptions().dtype(resultType).device(device),
                              layout.format);
        } else {
            fresh = at::empty_strided(shape, denseStrides(shape, perm),
                                      at::TensorOptions().dtype(resultType).device(device));
        }
        if (out.defined()) {  // out= resized: takes the new layout in place
            out.as_strided_(fresh.sizes(), fresh.strides());
        } else {
            out = fresh;
        }
    } else {
        at::assert_no_internal_overlap(out);
    }
    for (const at::Tensor& t : operands) {
        if (!isCpuScalar(t) && kind != OutputKind::Allocate) at::assert_no_partial_overlap(out, t);
    }
    if (out.numel() == 0) return out;

    mtiaTorchPointwise p{};
    p.op = spec.op;
    p.compute = computeKind(common);
    p.ninputs = static_cast<int32_t>(operands.size());
    std::copy(std::begin(spec.f), std::end(spec.f), p.f);
    std::copy(std::begin(spec.i), std::end(spec.i), p.i);
    // Dims in iteration order (innermost first), size-1 dims dropped, neighbours merged where every
    // operand steps through them as through one.
    std::vector<const at::Tensor*> all{&out};
    for (const at::Tensor& t : operands) all.push_back(&t);
    std::vector<std::vector<int64_t>> opStrides;
    for (const at::Tensor* t : all) {
        opStrides.push_back(isCpuScalar(*t) ? std::vector<int64_t>(ndim, 0)
                                            : broadcastStrides(*t, shape));
    }
    int32_t nd = 0;
    for (int64_t d : perm) {
        if (shape[d] == 1) continue;
        bool merge = nd > 0;
        for (size_t a = 0; merge && a < all.size(); ++a) {
            mtiaTorchOperand& o = a == 0 ? p.out : p.in[a - 1];
            merge = opStrides[a][d] == o.strides[nd - 1] * p.sizes[nd - 1];
        }
        if (merge) {
            p.sizes[nd - 1] *= shape[d];
            continue;
        }
        p.sizes[nd] = shape[d];
        for (size_t a = 0; a < all.size(); ++a) {
            mtiaTorchOperand& o = a == 0 ? p.out : p.in[a - 1];
            o.strides[nd] = opStrides[a][d];
        }
        ++nd;
    }
    p.ndim = nd;
    p.numel = static_cast<uint64_t>(out.numel());
    p.out.data = reinterpret_cast<uint64_t>(out.data_ptr());
    p.out.dtype = kernelDtype(out.scalar_type());
    for (size_t k = 0; k < operands.size(); ++k) {
        const at::Tensor& t = operands[k];
        mtiaTorchOperand& o = p.in[k];
        if (isCpuScalar(t)) {
            // By value. Rounded to the computation's dtype first, as the CPU casts its inputs,
            // unless the op reads a right-hand scalar in float.
            const bool keep = spec.rightScalarInOpMath && k == operands.size() - 1 &&
                              at::isReducedFloatingType(common);
            const at::ScalarType as =
                keep ? at::kFloat
                     : (k < static_cast<size_t>(spec.promoteFrom) ? t.scalar_type() : common);
            const c10::Scalar v = (t.scalar_type() == as ? t : t.to(as)).item();
            o.immediate = 1;
            o.dtype = kernelDtype(as == at::kBool ? at::kLong : as);
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
    static ModuleKernel kernel("mtia_torch_pointwise");
    kernel.launch(p, gridFor(p.numel));
    return out;
}

}  // namespace torch_mtia
