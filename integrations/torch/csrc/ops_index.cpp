// MTIA indexing kernels: index_select (embedding's forward), gather, scatter / scatter_add /
// scatter.reduce, index_add, index.Tensor and _index_put_impl_ (advanced indexing), nonzero,
// masked_select and embedding_dense_backward (kernels/index_kernels.cpp). Shapes, dtypes and the
// other argument errors are PyTorch's own: the structured operators run their meta functions on
// meta tensors of the same layout. Indices are checked in the kernel (the host cannot read them
// without a synchronisation that graph capture forbids): an index out of range faults the launch,
// and the fault surfaces as a RuntimeError naming the operator and the index at the next
// synchronising call, as CUDA's device-side asserts do.
#include "device_kernels.h"
#include "mtia_check.h"
#include "streams.h"
#include "tensor_args.h"

#include "../kernels/index_params.h"

#include <ATen/ExpandUtils.h>
#include <ATen/Functions.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/IndexingUtils.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <cstring>

namespace torch_mtia {
namespace {

at::Tensor onMeta(const at::Tensor& t) {
    return at::empty_strided(t.sizes(), t.strides(), t.options().device(at::kMeta));
}

// A 0-dim tensor as a 1-element 1-dim one: the kernels index along a dim.
at::Tensor atLeast1d(const at::Tensor& t) {
    return t.dim() == 0 ? t.view({1}) : t;
}

mtiaTorchTensorArg rawArg(const at::Tensor& t, at::IntArrayRef strides) {
    mtiaTorchTensorArg a{};
    a.data = reinterpret_cast<uint64_t>(t.data_ptr());
    a.dtype = kernelDtype(t.scalar_type());
    for (size_t d = 0; d < strides.size(); ++d) a.strides[d] = strides[d];
    return a;
}

mtiaTorchIndexed indexedOver(at::IntArrayRef sizes, const char* name) {
    TORCH_CHECK(sizes.size() <= MTIA_TORCH_MAX_DIMS, "torch_mtia: ", name, " of more than ",
                MTIA_TORCH_MAX_DIMS, " dims is not supported by the device kernels");
    mtiaTorchIndexed p{};
    p.ndim = static_cast<int32_t>(sizes.size());
    uint64_t numel = 1;
    for (size_t d = 0; d < sizes.size(); ++d) {
        p.sizes[d] = sizes[d];
        numel *= static_cast<uint64_t>(sizes[d]);
    }
    p.numel = numel;
    p.alpha = 1.0;
    p.ialpha = 1;
    std::snprintf(p.opName, sizeof p.opName, "%s", name);
    return p;
}

void launchIndexed(const mtiaTorchIndexed& p) {
    if (p.numel == 0) return;
    static ModuleKernel kernel("mtia_torch_indexed");
    // A scatter may write one element from several points: one block keeps the CPU's order.
    kernel.launch(p, p.gather ? gridFor(p.numel) : mtiaDim3{1, 1, 1});
}

// t's strides with the stride of dim replaced by 0 (the index supplies that dim).
std::vector<int64_t> stridesWithout(const at::Tensor& t, int64_t dim) {
    std::vector<int64_t> s(t.strides().begin(), t.strides().end());
    s[dim] = 0;
    return s;
}

// Along dim: for every point of the index space `sizes` (the shape of `direct`, of index's
// iteration), out[..] (reduce)= src[..] where the indexed operand is src (gather) or out (scatter),
// its position along dim given by index (whose strides over the space are indexStrides).
void alongDim(const at::Tensor& out, const at::Tensor& src, const at::Tensor& index,
              at::IntArrayRef indexStrides, int64_t dim, at::IntArrayRef sizes, bool gather,
              int32_t reduce, const char* name, const c10::Scalar& alpha = 1) {
    mtiaTorchIndexed p = indexedOver(sizes, name);
    p.gather = gather ? 1 : 0;
    p.reduce = reduce;
    const at::Tensor& indexed = gather ? src : out;
    p.out = gather ? rawArg(out, out.strides()) : rawArg(out, stridesWithout(out, dim));
    p.src = gather ? rawArg(src, stridesWithout(src, dim))
                   : (src.dim() == 0 ? rawArg(src, std::vector<int64_t>(sizes.size(), 0))
                                     : rawArg(src, src.strides()));
    p.nindex = 1;
    p.index[0] = rawArg(index, indexStrides);
    p.indexedSizes[0] = indexed.size(dim);
    p.indexedStrides[0] = indexed.stride(dim);
    setScalar(p.alpha, p.ialpha, alpha);
    launchIndexed(p);
}

void checkSameDevice(const at::Tensor& self, const at::Tensor& other, const char* name) {
    TORCH_CHECK(other.device() == self.device(), name, ": expected all tensors on ", self.device(),
                ", got one on ", other.device());
}

// ---- index_select ----

at::Tensor& indexSelectOut(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                           at::Tensor& out) {
    const c10::DeviceGuard guard(self.device());
    dim = at::maybe_wrap_dim(dim, self.dim());
    TORCH_CHECK_INDEX(index.dim() <= 1, "index_select(): Index is supposed to be a vector");
    TORCH_CHECK(index.scalar_type() == at::kLong || index.scalar_type() == at::kInt,
                "index_select(): Expected dtype int32 or int64 for index");
    TORCH_CHECK(self.scalar_type() == out.scalar_type(),
                "index_select(): self and result must have the same scalar type");
    TORCH_CHECK(self.dim() > 0 || index.numel() == 1,
                "index_select(): Index to scalar can have only 1 value, got ", index.numel(),
                " value(s)");
    checkSameDevice(self, index, "index_select()");
    checkSameDevice(self, out, "index_select()");
    at::assert_no_internal_overlap(out);
    at::assert_no_overlap(out, self);
    at::assert_no_overlap(out, index);
    std::vector<int64_t> sizes(self.sizes().begin(), self.sizes().end());
    if (self.dim() > 0) sizes[dim] = index.numel();
    if (out.sizes() != at::IntArrayRef(sizes)) out.resize_(sizes);
    if (out.numel() == 0) return out;
    const at::Tensor s = atLeast1d(self), o = atLeast1d(out), idx = atLeast1d(index);
    std::vector<int64_t> istrides(s.dim(), 0);
    istrides[dim] = idx.stride(0);
    alongDim(o, s, idx, istrides, dim, o.sizes(), /*gather=*/true, mtiaTorchIndexAssign,
             "index_select");
    return out;
}

at::Tensor indexSelect(const at::Tensor& self, int64_t dim, const at::Tensor& index) {
    const c10::DeviceGuard guard(self.device());
    at::Tensor out = emptyDevice({0}, self.scalar_type(), self.device());
    return indexSelectOut(self, dim, index, out);
}

// ---- gather ----

at::Tensor& gatherOut(const at::Tensor& self, int64_t dim, const at::Tensor& index, bool sparse,
                      at::Tensor& out) {
    const c10::DeviceGuard guard(self.device());
    const at::Tensor shape = at::gather(onMeta(self), dim, onMeta(index), sparse);
    checkSameDevice(self, index, "gather()");
    TORCH_CHECK(out.scalar_type() == self.scalar_type(),
                "gather(): Expected out tensor to have dtype ", self.scalar_type(), ", but got ",
                out.scalar_type(), " instead");
    if (out.sizes() != shape.sizes()) out.resize_(shape.sizes());
    at::assert_no_internal_overlap(out);
    at::assert_no_overlap(out, self);
    at::assert_no_partial_overlap(out, index);
    if (index.numel() == 0) return out;
    dim = at::maybe_wrap_dim(dim, self.dim());
    const at::Tensor s = atLeast1d(self), o = atLeast1d(out), idx = atLeast1d(index);
    alongDim(o, s, idx, idx.strides(), dim, idx.sizes(), true, mtiaTorchIndexAssign, "gather");
    return out;
}

at::Tensor gather(const at::Tensor& self, int64_t dim, const at::Tensor& index, bool sparse) {
    const c10::DeviceGuard guard(self.device());
    at::Tensor out = emptyDevice(index.sizes(), self.scalar_type(), self.device());
    return gatherOut(self, dim, index, sparse, out);
}

// ---- scatter family ----

int32_t reduceCode(c10::string_view reduce) {
    if (reduce == "add" || reduce == "sum") return mtiaTorchIndexAdd;
    if (reduce == "multiply" || reduce == "prod") return mtiaTorchIndexMul;
    if (reduce == "amax") return mtiaTorchIndexMax;
    if (reduce == "amin") return mtiaTorchIndexMin;
    TORCH_CHECK(false, "torch_mtia: scatter reduce '", reduce, "' is not supported on the device");
}

// out (already holding self's values) with src (a tensor, or a 0-dim tensor of out's dtype for
// the value forms) scattered along dim.
void scatterInto(at::Tensor& out, int64_t dim, const at::Tensor& index, const at::Tensor& src,
                 int32_t reduce, const char* name) {
    if (index.numel() == 0) return;
    checkSameDevice(out, index, name);
    checkSameDevice(out, src, name);
    dim = at::maybe_wrap_dim(dim, out.dim());
    at::Tensor o = atLeast1d(out);
    const at::Tensor idx = atLeast1d(index);
    const at::Tensor s = src.dim() == 0 ? src : atLeast1d(src);
    alongDim(o, s, idx, idx.strides(), dim, idx.sizes(), false, reduce, name);
}

at::Tensor scalarOnDevice(const c10::Scalar& value, const at::Tensor& like) {
    at::Tensor t = emptyDevice({}, like.scalar_type(), like.device());
    t.fill_(value);
    return t;
}

// Prepares out for a functional (clone of self), in-place (self) or out= form.
at::Tensor& startFrom(const at::Tensor& self, at::Tensor& out) {
    if (!out.is_same(self)) {
        if (out.sizes() != self.sizes()) out.resize_(self.sizes());
        out.copy_(self);
    }
    return out;
}

at::Tensor cloneOf(const at::Tensor& self) {
    at::Tensor out = at::empty_like(self);
    out.copy_(self);
    return out;
}

void checkScatterMeta(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                      const at::Tensor* src, const c10::Scalar* value,
                      c10::optional<c10::string_view> reduce, bool add) {
    const at::Tensor m = onMeta(self);
    if (add) {
        at::scatter_add(m, dim, onMeta(index), onMeta(*src));
    } else if (src != nullptr) {
        reduce ? at::scatter(m, dim, onMeta(index), onMeta(*src), *reduce)
               : at::scatter(m, dim, onMeta(index), onMeta(*src));
    } else {
        reduce ? at::scatter(m, dim, onMeta(index), *value, *reduce)
               : at::scatter(m, dim, onMeta(index), *value);
    }
}

at::Tensor& scatterSrcOut(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                          const at::Tensor& src, at::Tensor& out) {
    const c10::DeviceGuard guard(self.device());
    checkScatterMeta(self, dim, index, &src, nullptr, c10::nullopt, false);
    startFrom(self, out);
    scatterInto(out, dim, index, src, mtiaTorchIndexAssign, "scatter");
    return out;
}
at::Tensor scatterSrc(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                      const at::Tensor& src) {
    at::Tensor out = cloneOf(self);
    return scatterSrcOut(out, dim, index, src, out);
}
at::Tensor& scatterSrcInPlace(at::Tensor& self, int64_t dim, const at::Tensor& index,
                              const at::Tensor& src) {
    return scatterSrcOut(self, dim, index, src, self);
}

at::Tensor& scatterValueOut(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                            const c10::Scalar& value, at::Tensor& out) {
    const c10::DeviceGuard guard(self.device());
    checkScatterMeta(self, dim, index, nullptr, &value, c10::nullopt, false);
    startFrom(self, out);
    scatterInto(out, dim, index, scalarOnDevice(value, out), mtiaTorchIndexAssign, "scatter");
    return out;
}
at::Tensor scatterValue(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                        const c10::Scalar& value) {
    at::Tensor out = cloneOf(self);
    return scatterValueOut(out, dim, index, value, out);
}
at::Tensor& scatterValueInPlace(at::Tensor& self, int64_t dim, const at::Tensor& index,
                                const c10::Scalar& value) {
    return scatterValueOut(self, dim, index, value, self);
}

at::Tensor& scatterReduceOut(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                             const at::Tensor& src, c10::string_view reduce, at::Tensor& out) {
    const c10::DeviceGuard guard(self.device());
    checkScatterMeta(self, dim, index, &src, nullptr, reduce, false);
    startFrom(self, out);
    scatterInto(out, dim, index, src, reduceCode(reduce), "scatter");
    return out;
}
at::Tensor scatterReduce(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                         const at::Tensor& src, c10::string_view reduce) {
    at::Tensor out = cloneOf(self);
    return scatterReduceOut(out, dim, index, src, reduce, out);
}
at::Tensor& scatterReduceInPlace(at::Tensor& self, int64_t dim, const at::Tensor& index,
                                 const at::Tensor& src, c10::string_view reduce) {
    return scatterReduceOut(self, dim, index, src, reduce, self);
}

at::Tensor& scatterValueReduceOut(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                                  const c10::Scalar& value, c10::string_view reduce,
                                  at::Tensor& out) {
    const c10::DeviceGuard guard(self.device());
    checkScatterMeta(self, dim, index, nullptr, &value, reduce, false);
    startFrom(self, out);
    scatterInto(out, dim, index, scalarOnDevice(value, out), reduceCode(reduce), "scatter");
    return out;
}
at::Tensor scatterValueReduce(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                              const c10::Scalar& value, c10::string_view reduce) {
    at::Tensor out = cloneOf(self);
    return scatterValueReduceOut(out, dim, index, value, reduce, out);
}
at::Tensor& scatterValueReduceInPlace(at::Tensor& self, int64_t dim, const at::Tensor& index,
                                      const c10::Scalar& value, c10::string_view reduce) {
    return scatterValueReduceOut(self, dim, index, value, reduce, self);
}

at::Tensor& scatterAddOut(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                          const at::Tensor& src, at::Tensor& out) {
    const c10::DeviceGuard guard(self.device());
    checkScatterMeta(self, dim, index, &src, nullptr, c10::nullopt, true);
    startFrom(self, out);
    scatterInto(out, dim, index, src, mtiaTorchIndexAdd, "scatter_add");
    return out;
}
at::Tensor scatterAdd(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                      const at::Tensor& src) {
    at::Tensor out = cloneOf(self);
    return scatterAddOut(out, dim, index, src, out);
}
at::Tensor& scatterAddInPlace(at::Tensor& self, int64_t dim, const at::Tensor& index,
                              const at::Tensor& src) {
    return scatterAddOut(self, dim, index, src, self);
}

// ---- index_add ----

at::Tensor& indexAddOut(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                        const at::Tensor& source, const c10::Scalar& alpha, at::Tensor& out) {
    const c10::DeviceGuard guard(self.device());
    at::index_add(onMeta(self), dim, onMeta(index), onMeta(source), alpha);
    checkSameDevice(self, index, "index_add_()");
    checkSameDevice(self, source, "index_add_()");
    startFrom(self, out);
    if (index.numel() == 0 || source.numel() == 0) return out;
    dim = at::maybe_wrap_dim(dim, self.dim());
    at::Tensor o = atLeast1d(out);
    const at::Tensor src = atLeast1d(source), idx = atLeast1d(index);
    std::vector<int64_t> istrides(src.dim(), 0);
    istrides[dim] = idx.stride(0);
    alongDim(o, src, idx, istrides, dim, src.sizes(), false, mtiaTorchIndexAdd, "index_add", alpha);
    return out;
}
at::Tensor indexAdd(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                    const at::Tensor& source, const c10::Scalar& alpha) {
    at::Tensor out = cloneOf(self);
    return indexAddOut(out, dim, index, source, alpha, out);
}
at::Tensor& indexAddInPlace(at::Tensor& self, int64_t dim, const at::Tensor& index,
                            const at::Tensor& source, const c10::Scalar& alpha) {
    return indexAddOut(self, dim, index, source, alpha, self);
}

// ---- advanced indexing ----

// self indexed by tensors (after masks became their nonzero coordinates and the tensors were
// broadcast together): the result's shape, self restrided over it (0 along the indexed dims) and
// each index's strides over it.
struct Advanced {
    at::Tensor src;  // self, perhaps with the indexed dims moved to the front
    std::vector<at::Tensor> indices;
    std::vector<int64_t> shape, srcStrides;
    std::vector<std::vector<int64_t>> indexStrides;
    std::vector<int64_t> indexedSizes, indexedStrides;
};

Advanced advancedIndex(const at::Tensor& self, const c10::List<c10::optional<at::Tensor>>& orig) {
    at::native::checkIndexTensorTypes(orig, /*allow_int=*/true);
    TORCH_CHECK_INDEX(orig.size() <= static_cast<size_t>(self.dim()),
                      "too many indices for tensor of dimension ", self.dim(), " (got ",
                      orig.size(), ")");
    // Masks become their nonzero coordinates here (a device-to-host read of the count, as CUDA).
    std::vector<at::Tensor> indices =
        at::native::expandTensors(self, orig, /*ensure_same_device=*/true);
    try {
        indices = at::expand_outplace(indices);
    } catch (std::exception&) {
        TORCH_CHECK_INDEX(false,
                          "shape mismatch: indexing tensors could not be broadcast together");
    }
    while (indices.size() < static_cast<size_t>(self.dim())) indices.emplace_back();
    Advanced a;
    a.src = self;
    if (!at::native::hasContiguousSubspace(indices)) {
        std::tie(a.src, indices) = at::native::transposeToFront(self, indices);
    }
    int64_t before = 0, after = 0;
    at::IntArrayRef indexShape;
    for (size_t d = 0; d < indices.size(); ++d) {
        if (indices[d].defined()) {
            indexShape = indices[d].sizes();
            a.indexedSizes.push_back(a.src.size(d));
            a.indexedStrides.push_back(a.src.stride(d));
            a.indices.push_back(indices[d]);
        } else if (a.indices.empty()) {
            ++before;
        } else {
            ++after;
        }
    }
    TORCH_CHECK(a.indices.size() <= MTIA_TORCH_MAX_INDICES, "torch_mtia: more than ",
                MTIA_TORCH_MAX_INDICES, " index tensors are not supported on the device");
    const int64_t nidx = static_cast<int64_t>(a.indices.size());
    for (int64_t d = 0; d < before; ++d) {
        a.shape.push_back(a.src.size(d));
        a.srcStrides.push_back(a.src.stride(d));
    }
    for (int64_t s : indexShape) {
        a.shape.push_back(s);
        a.srcStrides.push_back(0);
    }
    for (int64_t d = before + nidx; d < a.src.dim(); ++d) {
        a.shape.push_back(a.src.size(d));
        a.srcStrides.push_back(a.src.stride(d));
    }
    for (const at::Tensor& idx : a.indices) {
        std::vector<int64_t> s(a.shape.size(), 0);
        for (int64_t d = 0; d < idx.dim(); ++d) s[before + d] = idx.stride(d);
        a.indexStrides.push_back(std::move(s));
    }
    for (const at::Tensor& idx : a.indices) checkSameDevice(self, idx, "index");
    return a;
}

void setIndices(mtiaTorchIndexed& p, const Advanced& a) {
    p.nindex = static_cast<int32_t>(a.indices.size());
    p.allowNegative = 1;
    for (size_t k = 0; k < a.indices.size(); ++k) {
        p.index[k] = rawArg(a.indices[k], a.indexStrides[k]);
        p.indexedSizes[k] = a.indexedSizes[k];
        p.indexedStrides[k] = a.indexedStrides[k];
    }
}

at::Tensor& indexOut(const at::Tensor& self, const c10::List<c10::optional<at::Tensor>>& indices,
                     at::Tensor& out) {
    const c10::DeviceGuard guard(self.device());
    const Advanced a = advancedIndex(self, indices);
    TORCH_CHECK(out.scalar_type() == self.scalar_type(), "index_out: self (", self.scalar_type(),
                ") and result (", out.scalar_type(), ") must have the same scalar type");
    if (out.sizes() != at::IntArrayRef(a.shape)) out.resize_(a.shape);
    if (out.numel() == 0) return out;
    at::assert_no_internal_overlap(out);
    at::assert_no_overlap(out, self);
    mtiaTorchIndexed p = indexedOver(a.shape, "index");
    p.gather = 1;
    p.out = rawArg(out, out.strides());
    p.src = rawArg(a.src, a.srcStrides);
    setIndices(p, a);
    launchIndexed(p);
    return out;
}

at::Tensor index(const at::Tensor& self, const c10::List<c10::optional<at::Tensor>>& indices) {
    const c10::DeviceGuard guard(self.device());
    at::Tensor out = emptyDevice({0}, self.scalar_type(), self.device());
    return indexOut(self, indices, out);
}

at::Tensor& indexPutImpl(at::Tensor& self, const c10::List<c10::optional<at::Tensor>>& indices,
                         const at::Tensor& values, bool accumulate, bool /*unsafe*/) {
    const c10::DeviceGuard guard(self.device());
    TORCH_CHECK_INDEX(indices.size() <= static_cast<size_t>(self.dim()),
                      "too many indices for tensor of dimension ", self.dim(), " (got ",
                      indices.size(), ")");
    if (at::has_internal_overlap(self) == at::MemOverlap::Yes) {
        TORCH_WARN("Use of index_put_ on expanded tensors is deprecated. Please clone() the tensor "
                   "before performing this operation. This also applies to advanced indexing e.g. "
                   "tensor[indices] = tensor");
    }
    TORCH_CHECK(values.scalar_type() == self.scalar_type(),
                "Index put requires the source and destination dtypes match, "
                "got ",
                self.scalar_type(), " for the destination and ", values.scalar_type(),
                " for the source.");
    at::Tensor v = values;
    if (!isDevice(v)) {
        TORCH_CHECK(v.dim() == 0, "index_put_: values on ", v.device(), " for a tensor on ",
                    self.device());
        v = scalarOnDevice(v.item(), self);
    }
    checkSameDevice(self, v, "index_put_");
    for (const auto& i : indices) {
        const c10::optional<at::Tensor> o = i;
        if (o && o->defined() && isDevice(*o)) at::assert_no_overlap(self, *o);
    }
    at::assert_no_overlap(self, v);
    const Advanced a = advancedIndex(self, indices);
    TORCH_CHECK(at::is_expandable_to(v.sizes(), a.shape), "shape mismatch: value tensor of shape ",
                v.sizes(), " cannot be broadcast to indexing result of shape ",
                at::IntArrayRef(a.shape));
    mtiaTorchIndexed p = indexedOver(a.shape, "index_put_");
    p.gather = 0;
    p.reduce = accumulate ? mtiaTorchIndexAdd : mtiaTorchIndexAssign;
    p.out = rawArg(a.src, a.srcStrides);
    p.src = tensorArg(v, a.shape);
    setIndices(p, a);
    launchIndexed(p);
    return self;
}

// ---- nonzero, masked_select ----

// nonzero's count, read back from the device: a synchronisation of the current stream, so not
// capturable (as CUDA's nonzero, whose result's size is the data's too).
int64_t countNonzero(const at::Tensor& self, mtiaTorchNonzero& p) {
    TORCH_CHECK(self.dim() <= MTIA_TORCH_MAX_DIMS,
                "nonzero is not supported for tensors with more than ", MTIA_TORCH_MAX_DIMS,
                " dimensions");
    p = mtiaTorchNonzero{};
    p.ndim = static_cast<int32_t>(self.dim());
    p.numel = static_cast<uint64_t>(self.numel());
    for (int64_t d = 0; d < self.dim(); ++d) p.sizes[d] = self.size(d);
    p.src = rawArg(self, self.strides());
    if (p.numel == 0) return 0;
    at::Tensor counted = emptyDevice({}, at::kLong, self.device());
    p.count = reinterpret_cast<uint64_t>(counted.data_ptr());
    static ModuleKernel kernel("mtia_torch_nonzero");
    kernel.launch(p, mtiaDim3{1, 1, 1});
    int64_t count = 0;
    MTIA_CHECK(
        mtiaMemcpyAsync(&count, counted.data_ptr(), sizeof count, mtiaMemcpyDeviceToHost, nullptr));
    MTIA_CHECK(mtiaStreamSynchronize(nullptr));
    return count;
}

void writeNonzero(mtiaTorchNonzero p, const at::Tensor& out, int64_t count) {
    if (count == 0 || p.ndim == 0) return;
    p.write = 1;
    p.out = reinterpret_cast<uint64_t>(out.data_ptr());
    p.outStrides[0] = out.stride(0);
    p.outStrides[1] = out.stride(1);
    p.outRows = count;
    static ModuleKernel kernel("mtia_torch_nonzero");
    kernel.launch(p, mtiaDim3{1, 1, 1});
}

at::Tensor& nonzeroOut(const at::Tensor& self, at::Tensor& out) {
    const c10::DeviceGuard guard(self.device());
    TORCH_CHECK(out.scalar_type() == at::kLong, "nonzero for ", self.device().type(),
                ": expected out tensor to have scalar type Long but got scalar type",
                out.scalar_type());
    checkSameDevice(self, out, "nonzero");
    mtiaTorchNonzero p;
    const int64_t count = countNonzero(self, p);
    const std::vector<int64_t> shape{count, self.dim()};
    if (out.sizes() != at::IntArrayRef(shape)) out.resize_(shape);
    writeNonzero(p, out, count);
    return out;
}

// Column-major (strides 1, n), as the CPU's result.
at::Tensor nonzero(const at::Tensor& self) {
    const c10::DeviceGuard guard(self.device());
    mtiaTorchNonzero p;
    const int64_t count = countNonzero(self, p);
    at::Tensor out = at::empty_strided({count, self.dim()}, {1, std::max<int64_t>(count, 1)},
                                       self.options().dtype(at::kLong));
    writeNonzero(p, out, count);
    return out;
}

at::Tensor maskedSelect(const at::Tensor& self, const at::Tensor& mask) {
    const c10::DeviceGuard guard(self.device());
    TORCH_CHECK(mask.scalar_type() == at::kBool, "masked_select: expected BoolTensor for mask");
    checkSameDevice(self, mask, "masked_select()");
    auto [s, m] = at::expand_outplace(self, mask);
    // The result is 1-dim even for 0-dim operands, whose mask indexes nothing as a 0-dim one.
    const at::Tensor s1 = s->dim() == 0 ? s->view({1}) : *s, m1 = m->dim() == 0 ? m->view({1}) : *m;
    return at::index(s1, c10::List<c10::optional<at::Tensor>>({m1}));
}

at::Tensor& maskedSelectOut(const at::Tensor& self, const at::Tensor& mask, at::Tensor& out) {
    const c10::DeviceGuard guard(self.device());
    TORCH_CHECK(mask.scalar_type() == at::kBool, "masked_select: expected BoolTensor for mask");
    TORCH_CHECK(self.scalar_type() == out.scalar_type(),
                "masked_select(): self and result must have the same scalar type");
    checkSameDevice(self, mask, "masked_select()");
    const at::Tensor r = maskedSelect(self, mask);
    if (out.sizes() != r.sizes()) out.resize_(r.sizes());
    out.copy_(r);
    return out;
}

// Fills the masked elements of self, in order, from source: checked on the device (running out of
// source faults the launch), so no count is read back and the operator is capturable.
at::Tensor& maskedScatter(at::Tensor& self, const at::Tensor& mask, const at::Tensor& source) {
    const c10::DeviceGuard guard(self.device());
    TORCH_CHECK(mask.scalar_type() == at::kBool,
                "masked_scatter_ only supports boolean masks, but got mask with dtype ",
                mask.scalar_type());
    TORCH_CHECK(self.scalar_type() == source.scalar_type(),
                "masked_scatter_: expected self and source to have same dtypes but got",
                self.scalar_type(), " and ", source.scalar_type());
    checkSameDevice(self, mask, "masked_scatter_");
    checkSameDevice(self, source, "masked_scatter_");
    TORCH_CHECK(self.dim() <= MTIA_TORCH_MAX_DIMS, "torch_mtia: masked_scatter_ of more than ",
                MTIA_TORCH_MAX_DIMS, " dims is not supported on the device");
    at::assert_no_internal_overlap(self);
    const at::Tensor m = mask.expand(self.sizes());  // refuses a mask that does not broadcast
    if (self.numel() == 0) return self;
    const at::Tensor src = contiguousOnDevice(source, source.scalar_type());
    mtiaTorchMaskedScatter p{};
    p.ndim = static_cast<int32_t>(self.dim());
    for (int64_t d = 0; d < self.dim(); ++d) p.sizes[d] = self.size(d);
    p.numel = static_cast<uint64_t>(self.numel());
    p.self = rawArg(self, self.strides());
    p.mask = rawArg(m, m.strides());
    p.source = reinterpret_cast<uint64_t>(src.data_ptr());
    p.sourceNumel = src.numel();
    static ModuleKernel kernel("mtia_torch_masked_scatter");
    kernel.launch(p, mtiaDim3{1, 1, 1});
    return self;
}

// ---- embedding ----

at::Tensor& embeddingRenorm(at::Tensor& self, const at::Tensor& indices, double maxNorm,
                            double normType) {
    const c10::DeviceGuard guard(self.device());
    TORCH_CHECK(self.dim() == 2,
                "embedding_renorm_: Expected 2-dimensional tensor for argument #1 'self', but got ",
                self.dim(), "-dimensional tensor");
    TORCH_CHECK(indices.scalar_type() == at::kLong || indices.scalar_type() == at::kInt,
                "embedding_renorm_: Expected tensor for argument #2 'indices' to have one of the "
                "following scalar types: Long, Int; but got ",
                indices.scalar_type());
    checkSameDevice(self, indices, "embedding_renorm_");
    if (indices.numel() == 0 || self.numel() == 0) return self;
    const at::Tensor idx = indices.reshape({indices.numel()});
    mtiaTorchEmbeddingRenorm p{};
    p.weight = reinterpret_cast<uint64_t>(self.data_ptr());
    p.indices = reinterpret_cast<uint64_t>(idx.data_ptr());
    p.dtype = kernelDtype(self.scalar_type());
    p.indexDtype = kernelDtype(idx.scalar_type());
    p.numWeights = self.size(0);
    p.numIndices = idx.numel();
    p.dim = self.size(1);
    p.rowStride = self.stride(0);
    p.colStride = self.stride(1);
    p.indexStride = idx.stride(0);
    p.maxNorm = maxNorm;
    p.normType = normType;
    static ModuleKernel kernel("mtia_torch_embedding_renorm");
    kernel.launch(p, mtiaDim3{1, 1, 1});
    return self;
}

at::Tensor embeddingDenseBackward(const at::Tensor& gradOutput, const at::Tensor& indices,
                                  int64_t numWeights, int64_t paddingIdx, bool scaleByFreq) {
    const c10::DeviceGuard guard(gradOutput.device());
    TORCH_CHECK(indices.scalar_type() == at::kLong || indices.scalar_type() == at::kInt,
                "embedding_backward: Expected tensor for argument #1 'indices' to have one of the "
                "following scalar types: Long, Int; but got ",
                indices.scalar_type());
    checkSameDevice(gradOutput, indices, "embedding_backward");
    const int64_t numIndices = indices.numel();
    const int64_t dim = gradOutput.size(-1);
    const at::Tensor grad = gradOutput.reshape({numIndices, dim});
    const at::Tensor idx = indices.reshape({numIndices});
    at::Tensor gradWeight =
        emptyDevice({numWeights, dim}, gradOutput.scalar_type(), gradOutput.device());
    gradWeight.zero_();
    if (numIndices == 0 || dim == 0 || numWeights == 0) return gradWeight;
    mtiaTorchEmbeddingBackward p{};
    at::Tensor counts;
    if (scaleByFreq) {
        counts = emptyDevice({numWeights}, at::kLong, gradOutput.device());
        counts.zero_();
        p.counts = reinterpret_cast<uint64_t>(counts.data_ptr());
        p.scaleByFreq = 1;
    }
    p.gradWeight = reinterpret_cast<uint64_t>(gradWeight.data_ptr());
    p.grad = reinterpret_cast<uint64_t>(grad.data_ptr());
    p.indices = reinterpret_cast<uint64_t>(idx.data_ptr());
    p.dtype = kernelDtype(gradOutput.scalar_type());
    p.indexDtype = kernelDtype(idx.scalar_type());
    p.numWeights = numWeights;
    p.numIndices = numIndices;
    p.dim = dim;
    p.paddingIdx = paddingIdx;
    p.gradRowStride = grad.stride(0);
    p.gradColStride = grad.stride(1);
    p.indexStride = idx.stride(0);
    static ModuleKernel kernel("mtia_torch_embedding_backward");
    kernel.launch(p, mtiaDim3{1, 1, 1});
    return gradWeight;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, MTIA, m) {
    m.impl("index_select", TORCH_FN(indexSelect));
    m.impl("index_select.out", TORCH_FN(indexSelectOut));
    m.impl("gather", TORCH_FN(gather));
    m.impl("gather.out", TORCH_FN(gatherOut));
    m.impl("scatter.src", TORCH_FN(scatterSrc));
    m.impl("scatter_.src", TORCH_FN(scatterSrcInPlace));
    m.impl("scatter.src_out", TORCH_FN(scatterSrcOut));
    m.impl("scatter.value", TORCH_FN(scatterValue));
    m.impl("scatter_.value", TORCH_FN(scatterValueInPlace));
    m.impl("scatter.value_out", TORCH_FN(scatterValueOut));
    m.impl("scatter.reduce", TORCH_FN(scatterReduce));
    m.impl("scatter_.reduce", TORCH_FN(scatterReduceInPlace));
    m.impl("scatter.reduce_out", TORCH_FN(scatterReduceOut));
    m.impl("scatter.value_reduce", TORCH_FN(scatterValueReduce));
    m.impl("scatter_.value_reduce", TORCH_FN(scatterValueReduceInPlace));
    m.impl("scatter.value_reduce_out", TORCH_FN(scatterValueReduceOut));
    m.impl("scatter_add", TORCH_FN(scatterAdd));
    m.impl("scatter_add_", TORCH_FN(scatterAddInPlace));
    m.impl("scatter_add.out", TORCH_FN(scatterAddOut));
    m.impl("index_add", TORCH_FN(indexAdd));
    m.impl("index_add_", TORCH_FN(indexAddInPlace));
    m.impl("index_add.out", TORCH_FN(indexAddOut));
    m.impl("index.Tensor", TORCH_FN(index));
    m.impl("index.Tensor_out", TORCH_FN(indexOut));
    m.impl("_index_put_impl_", TORCH_FN(indexPutImpl));
    m.impl("nonzero", TORCH_FN(nonzero));
    m.impl("nonzero.out", TORCH_FN(nonzeroOut));
    m.impl("masked_select", TORCH_FN(maskedSelect));
    m.impl("masked_select.out", TORCH_FN(maskedSelectOut));
    m.impl("masked_scatter_", TORCH_FN(maskedScatter));
    m.impl("embedding_dense_backward", TORCH_FN(embeddingDenseBackward));
    m.impl("embedding_renorm_", TORCH_FN(embeddingRenorm));
}

}  // namespace torch_mtia
