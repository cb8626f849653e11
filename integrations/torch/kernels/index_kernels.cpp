// Indexing kernels: one indexed copy (gather through an index: index_select, gather, index.Tensor;
// scatter through one: scatter, scatter_add, index_add_, index_put_), embedding_dense_backward and
// nonzero. An index out of range faults the launch with the operator's name and the index, which
// PyTorch sees as a RuntimeError at its next synchronising call (as CUDA's device-side asserts).
#include "dtype_access.h"
#include "index_params.h"

#include <cinttypes>

namespace {

using namespace mtia_kernels;

char* elementAt(uint64_t data, int32_t dtype, int64_t offset) {
    return reinterpret_cast<char*>(data) + offset * elementSize(dtype);
}

// Walks an index space in row-major order keeping one offset per operand, so that the inner loop
// adds strides instead of dividing.
struct Walker {
    int ndim;
    const int64_t* sizes;
    int64_t coord[MTIA_TORCH_MAX_DIMS];

    void start(uint64_t linear) {
        for (int d = ndim - 1; d >= 0; --d) {
            const auto size = static_cast<uint64_t>(sizes[d]);
            coord[d] = static_cast<int64_t>(linear % size);
            linear /= size;
        }
    }
    int64_t offset(const int64_t* strides) const {
        int64_t o = 0;
        for (int d = 0; d < ndim; ++d) o += coord[d] * strides[d];
        return o;
    }
    // Advances one point; returns the dim whose coordinate grew (lower dims wrapped to 0).
    int next() {
        int d = ndim - 1;
        while (d > 0 && coord[d] + 1 == sizes[d]) coord[d--] = 0;
        ++coord[d];
        return d;
    }
    // The change of an operand's offset when next() returned d.
    int64_t delta(const int64_t* strides, int d) const {
        int64_t change = strides[d];
        for (int e = d + 1; e < ndim; ++e) change -= (sizes[e] - 1) * strides[e];
        return change;
    }
};

bool indexFault(const mtiaKernelContext* ctx, const mtiaTorchIndexed& p, int k, int64_t value) {
    char what[200];
    std::snprintf(what, sizeof what,
                  "index %" PRId64 " is out of bounds for dimension %d with size %" PRId64, value,
                  k, p.indexedSizes[k]);
    char name[40];
    std::snprintf(name, sizeof name, "%.31s", p.opName);
    return fault(ctx, name, what);
}

void combine(const mtiaTorchIndexed& p, char* target, const char* value) {
    const int32_t td = p.out.dtype, vd = p.src.dtype;
    if (p.reduce == mtiaTorchIndexAssign) {
        if (isFloating(vd) || isFloating(td) || td == mtiaTorchBool)
            storeDouble(target, td, loadDouble(value, vd));
        else
            storeInt(target, td, loadInt(value, vd));
        return;
    }
    if (isFloating(td)) {
        const double old = loadDouble(target, td), v = loadDouble(value, vd);
        double r = old;
        switch (p.reduce) {
        case mtiaTorchIndexAdd: r = p.alpha == 1.0 ? old + v : old + p.alpha * v; break;
        case mtiaTorchIndexMul: r = old * v; break;
        case mtiaTorchIndexMax: r = (std::isnan(v) || v > old) ? v : old; break;
        case mtiaTorchIndexMin: r = (std::isnan(v) || v < old) ? v : old; break;
        default: break;
        }
        if (std::isnan(old) && (p.reduce == mtiaTorchIndexMax || p.reduce == mtiaTorchIndexMin))
            r = old;
        storeDouble(target, td, r);
    } else if (td == mtiaTorchBool) {
        const bool old = loadInt(target, td) != 0, v = loadInt(value, vd) != 0;
        bool r = old;
        switch (p.reduce) {
        case mtiaTorchIndexAdd: r = old || (v && p.ialpha != 0); break;
        case mtiaTorchIndexMax: r = old || v; break;
        case mtiaTorchIndexMul:
        case mtiaTorchIndexMin: r = old && v; break;
        default: break;
        }
        storeInt(target, td, r ? 1 : 0);
    } else {
        const auto old = static_cast<uint64_t>(loadInt(target, td));
        const auto v = static_cast<uint64_t>(loadInt(value, vd));
        uint64_t r = old;
        switch (p.reduce) {
        case mtiaTorchIndexAdd: r = old + static_cast<uint64_t>(p.ialpha) * v; break;
        case mtiaTorchIndexMul: r = old * v; break;
        case mtiaTorchIndexMax:
            r = static_cast<int64_t>(v) > static_cast<int64_t>(old) ? v : old;
            break;
        case mtiaTorchIndexMin:
            r = static_cast<int64_t>(v) < static_cast<int64_t>(old) ? v : old;
            break;
        default: break;
        }
        storeInt(target, td, static_cast<int64_t>(r));
    }
}

int64_t loadIndex(const mtiaTorchTensorArg& t, int64_t offset) {
    const char* at = elementAt(t.data, t.dtype, offset);
    return t.dtype == mtiaTorchInt32 ? loadAs<int32_t>(at) : loadAs<int64_t>(at);
}

// The element offset the indices at idxOff select in the indexed tensor; faults (and returns false)
// on an index out of range, naming it.
bool indexedShift(const mtiaKernelContext* ctx, const mtiaTorchIndexed& p, const int64_t* idxOff,
                  int64_t& shift) {
    for (int k = 0; k < p.nindex; ++k) {
        int64_t v = loadIndex(p.index[k], idxOff[k]);
        const int64_t size = p.indexedSizes[k];
        if (v < (p.allowNegative ? -size : 0) || v >= size) {
            indexFault(ctx, p, k, v);
            return false;
        }
        if (v < 0) v += size;
        shift += v * p.indexedStrides[k];
    }
    return true;
}

// Rows along the last dim moved whole: an assignment or a float32 sum between operands of one
// dtype that are contiguous along the last dim, which no index varies (index_select, embedding,
// x[idx], index_put_ of rows). The work range is split at row boundaries.
bool rowsFastPath(const mtiaTorchIndexed& p) {
    if (p.ndim < 1 || p.out.dtype != p.src.dtype) return false;
    if (p.reduce != mtiaTorchIndexAssign &&
        !(p.reduce == mtiaTorchIndexAdd && p.out.dtype == mtiaTorchFloat32 && p.alpha == 1.0))
        return false;
    const int last = p.ndim - 1;
    if (p.sizes[last] < 8 || p.out.strides[last] != 1 || p.src.strides[last] != 1) return false;
    for (int k = 0; k < p.nindex; ++k)
        if (p.index[k].strides[last] != 0) return false;
    return true;
}

void copyRows(const mtiaKernelContext* ctx, const mtiaTorchIndexed& p, Range r) {
    const int last = p.ndim - 1;
    const auto inner = static_cast<uint64_t>(p.sizes[last]);
    const uint64_t firstRow = r.begin / inner, endRow = (r.end + inner - 1) / inner;
    // Another block's range may start inside a row of ours: a row belongs to the block holding
    // its first element.
    const uint64_t rowBegin = (r.begin % inner == 0) ? firstRow : firstRow + 1;
    const uint64_t rowEnd = endRow;
    if (rowBegin >= rowEnd) return;
    const int esize = elementSize(p.out.dtype);
    Walker w{last, p.sizes, {}};
    w.start(rowBegin);
    int64_t outOff = w.offset(p.out.strides), srcOff = w.offset(p.src.strides);
    int64_t idxOff[MTIA_TORCH_MAX_INDICES];
    for (int k = 0; k < p.nindex; ++k) idxOff[k] = w.offset(p.index[k].strides);
    for (uint64_t row = rowBegin; row < rowEnd; ++row) {
        int64_t shift = 0;
        if (!indexedShift(ctx, p, idxOff, shift)) return;
        char* out = elementAt(p.out.data, p.out.dtype, outOff + (p.gather ? 0 : shift));
        const char* src = elementAt(p.src.data, p.src.dtype, srcOff + (p.gather ? shift : 0));
        const char* checked = p.gather ? src : out;
        if (!ctx->isDeviceRange(ctx, checked, inner * static_cast<uint64_t>(esize))) {
            fault(ctx, "mtia_torch_indexed", "an indexed row is not device memory of this device");
            return;
        }
        if (p.reduce == mtiaTorchIndexAssign) {
            std::memmove(out, src, inner * static_cast<uint64_t>(esize));
        } else {
            auto* o = reinterpret_cast<float*>(out);
            const auto* x = reinterpret_cast<const float*>(src);
            for (uint64_t j = 0; j < inner; ++j) o[j] += x[j];
        }
        if (row + 1 == rowEnd) break;
        if (last == 0) continue;
        const int d = w.next();
        outOff += w.delta(p.out.strides, d);
        srcOff += w.delta(p.src.strides, d);
        for (int k = 0; k < p.nindex; ++k) idxOff[k] += w.delta(p.index[k].strides, d);
    }
}

}  // namespace

MTIA_SIM_KERNEL_ARGS(mtia_torch_indexed, 1, sizeof(mtiaTorchIndexed));

MTIA_SIM_KERNEL(mtia_torch_indexed) {
    mtiaTorchIndexed p;
    std::memcpy(&p, args[0], sizeof p);
    constexpr const char* kName = "mtia_torch_indexed";
    if (p.ndim < 0 || p.ndim > MTIA_TORCH_MAX_DIMS || p.nindex < 0 ||
        p.nindex > MTIA_TORCH_MAX_INDICES || p.reduce < mtiaTorchIndexAssign ||
        p.reduce > mtiaTorchIndexMin) {
        fault(ctx, kName, "bad parameters");
        return;
    }
    for (int k = 0; k < p.nindex; ++k) {
        if (p.index[k].dtype != mtiaTorchInt64 && p.index[k].dtype != mtiaTorchInt32) {
            fault(ctx, kName, "an index is neither int64 nor int32");
            return;
        }
    }
    const Range r = blockRange(ctx, p.numel);
    if (r.begin >= r.end) return;
    // The indexed operand's range depends on the data; each indexed element is checked instead.
    const mtiaTorchTensorArg& direct = p.gather ? p.out : p.src;
    if (!checkRange(ctx, kName, p.gather ? "out" : "src", direct.data, direct.dtype, p.ndim,
                    p.sizes, direct.strides))
        return;
    for (int k = 0; k < p.nindex; ++k) {
        if (!checkRange(ctx, kName, "index", p.index[k].data, p.index[k].dtype, p.ndim, p.sizes,
                        p.index[k].strides))
            return;
    }
    const mtiaTorchTensorArg& indexed = p.gather ? p.src : p.out;
    const int esize = elementSize(indexed.dtype);
    if (rowsFastPath(p)) {
        copyRows(ctx, p, r);
        return;
    }
    Walker w{p.ndim, p.sizes, {}};
    w.start(r.begin);
    int64_t outOff = w.offset(p.out.strides), srcOff = w.offset(p.src.strides);
    int64_t idxOff[MTIA_TORCH_MAX_INDICES];
    for (int k = 0; k < p.nindex; ++k) idxOff[k] = w.offset(p.index[k].strides);
    for (uint64_t i = r.begin; i < r.end; ++i) {
        int64_t shift = 0;
        if (!indexedShift(ctx, p, idxOff, shift)) return;
        const int64_t o = outOff + (p.gather ? 0 : shift), s = srcOff + (p.gather ? shift : 0);
        char* target = elementAt(p.out.data, p.out.dtype, o);
        const char* value = elementAt(p.src.data, p.src.dtype, s);
        const char* checked = p.gather ? value : target;
        if (!ctx->isDeviceRange(ctx, checked, static_cast<uint64_t>(esize))) {
            fault(ctx, kName, "an indexed element is not device memory of this device");
            return;
        }
        combine(p, target, value);
        if (i + 1 == r.end) break;
        const int d = w.next();
        outOff += w.delta(p.out.strides, d);
        srcOff += w.delta(p.src.strides, d);
        for (int k = 0; k < p.nindex; ++k) idxOff[k] += w.delta(p.index[k].strides, d);
    }
}

MTIA_SIM_KERNEL_ARGS(mtia_torch_embedding_backward, 1, sizeof(mtiaTorchEmbeddingBackward));

MTIA_SIM_KERNEL(mtia_torch_embedding_backward) {
    mtiaTorchEmbeddingBackward p;
    std::memcpy(&p, args[0], sizeof p);
    constexpr const char* kName = "embedding_backward";
    if (blockIndex(ctx) != 0) return;
    const int64_t one = 1;
    const int64_t wsizes[2] = {p.numWeights, p.dim}, wstrides[2] = {p.dim, 1};
    const int64_t gsizes[2] = {p.numIndices, p.dim},
                  gstrides[2] = {p.gradRowStride, p.gradColStride};
    if (!checkRange(ctx, kName, "grad_weight", p.gradWeight, p.dtype, 2, wsizes, wstrides) ||
        !checkRange(ctx, kName, "grad", p.grad, p.dtype, 2, gsizes, gstrides) ||
        !checkRange(ctx, kName, "indices", p.indices, p.indexDtype, 1, &p.numIndices,
                    &p.indexStride) ||
        (p.scaleByFreq &&
         !checkRange(ctx, kName, "counts", p.counts, mtiaTorchInt64, 1, &p.numWeights, &one)))
        return;
    auto indexAt = [&](int64_t i) {
        const char* at = elementAt(p.indices, p.indexDtype, i * p.indexStride);
        return p.indexDtype == mtiaTorchInt32 ? int64_t{loadAs<int32_t>(at)} : loadAs<int64_t>(at);
    };
    auto* counts = reinterpret_cast<int64_t*>(p.counts);
    for (int64_t i = 0; i < p.numIndices; ++i) {
        const int64_t v = indexAt(i);
        if (v < 0 || v >= p.numWeights) {
            char what[160];
            std::snprintf(what, sizeof what,
                          "index %" PRId64 " is out of range for %" PRId64 " embeddings", v,
                          p.numWeights);
            fault(ctx, kName, what);
            return;
        }
        if (p.scaleByFreq) ++counts[v];
    }
    const int size = elementSize(p.dtype);
    for (int64_t i = 0; i < p.numIndices; ++i) {
        const int64_t v = indexAt(i);
        if (v == p.paddingIdx) continue;
        const double scale = p.scaleByFreq ? 1.0 / static_cast<double>(counts[v]) : 1.0;
        char* row = elementAt(p.gradWeight, p.dtype, v * p.dim);
        const char* g = elementAt(p.grad, p.dtype, i * p.gradRowStride);
        if (p.dtype == mtiaTorchFloat32 && p.gradColStride == 1 && !p.scaleByFreq) {
            auto* o = reinterpret_cast<float*>(row);
            const auto* x = reinterpret_cast<const float*>(g);
            for (int64_t j = 0; j < p.dim; ++j) o[j] += x[j];
            continue;
        }
        for (int64_t j = 0; j < p.dim; ++j) {
            char* o = row + j * size;
            const double x = loadDouble(g + j * p.gradColStride * size, p.dtype);
            storeDouble(o, p.dtype, loadDouble(o, p.dtype) + (p.scaleByFreq ? x * scale : x));
        }
    }
}

MTIA_SIM_KERNEL_ARGS(mtia_torch_nonzero, 1, sizeof(mtiaTorchNonzero));

MTIA_SIM_KERNEL(mtia_torch_nonzero) {
    mtiaTorchNonzero p;
    std::memcpy(&p, args[0], sizeof p);
    constexpr const char* kName = "mtia_torch_nonzero";
    if (blockIndex(ctx) != 0) return;
    if (p.ndim < 0 || p.ndim > MTIA_TORCH_MAX_DIMS) {
        fault(ctx, kName, "ndim is out of range");
        return;
    }
    if (!checkRange(ctx, kName, "src", p.src.data, p.src.dtype, p.ndim, p.sizes, p.src.strides))
        return;
    const int64_t one = 1;
    if (!p.write && !checkRange(ctx, kName, "count", p.count, mtiaTorchInt64, 1, &one, &one))
        return;
    const int cols = p.ndim;
    const int64_t osizes[2] = {p.outRows, cols};
    if (p.write && cols > 0 &&
        !checkRange(ctx, kName, "out", p.out, mtiaTorchInt64, 2, osizes, p.outStrides))
        return;
    Walker w{p.ndim, p.sizes, {}};
    w.start(0);
    int64_t off = w.offset(p.src.strides);
    int64_t n = 0;
    auto* out = reinterpret_cast<int64_t*>(p.out);
    for (uint64_t i = 0; i < p.numel; ++i) {
        const char* e = elementAt(p.src.data, p.src.dtype, off);
        const bool nz = isFloating(p.src.dtype) ? loadDouble(e, p.src.dtype) != 0.0
                                                : loadInt(e, p.src.dtype) != 0;
        if (nz) {
            if (p.write) {
                if (n >= p.outRows) break;  // the tensor changed since the count: keep in bounds
                for (int d = 0; d < cols; ++d)
                    out[n * p.outStrides[0] + d * p.outStrides[1]] = w.coord[d];
            }
            ++n;
        }
        if (i + 1 == p.numel) break;
        off += w.delta(p.src.strides, w.next());
    }
    if (!p.write) storeAs<int64_t>(reinterpret_cast<void*>(p.count), n);
}

MTIA_SIM_KERNEL_ARGS(mtia_torch_embedding_renorm, 1, sizeof(mtiaTorchEmbeddingRenorm));

MTIA_SIM_KERNEL(mtia_torch_embedding_renorm) {
    mtiaTorchEmbeddingRenorm p;
    std::memcpy(&p, args[0], sizeof p);
    constexpr const char* kName = "embedding_renorm_";
    if (blockIndex(ctx) != 0) return;
    const int64_t wsizes[2] = {p.numWeights, p.dim}, wstrides[2] = {p.rowStride, p.colStride};
    if (!checkRange(ctx, kName, "self", p.weight, p.dtype, 2, wsizes, wstrides) ||
        !checkRange(ctx, kName, "indices", p.indices, p.indexDtype, 1, &p.numIndices,
                    &p.indexStride))
        return;
    const int size = elementSize(p.dtype);
    // A repeated index finds its row already within max_norm and leaves it.
    for (int64_t i = 0; i < p.numIndices; ++i) {
        const char* at = elementAt(p.indices, p.indexDtype, i * p.indexStride);
        const int64_t v =
            p.indexDtype == mtiaTorchInt32 ? int64_t{loadAs<int32_t>(at)} : loadAs<int64_t>(at);
        if (v < 0 || v >= p.numWeights) {
            char what[160];
            std::snprintf(what, sizeof what,
                          "index %" PRId64 " is out of range for %" PRId64 " embeddings", v,
                          p.numWeights);
            fault(ctx, kName, what);
            return;
        }
        char* row = elementAt(p.weight, p.dtype, v * p.rowStride);
        double norm = 0.0;
        for (int64_t j = 0; j < p.dim; ++j) {
            const double x = std::fabs(loadDouble(row + j * p.colStride * size, p.dtype));
            if (p.normType == 0.0)
                norm += x != 0.0 ? 1.0 : 0.0;
            else if (std::isinf(p.normType))
                norm = std::max(norm, x);
            else if (p.normType == 1.0)
                norm += x;
            else if (p.normType == 2.0)
                norm += x * x;
            else
                norm += std::pow(x, p.normType);
        }
        if (p.normType == 2.0)
            norm = std::sqrt(norm);
        else if (p.normType != 0.0 && p.normType != 1.0 && !std::isinf(p.normType))
            norm = std::pow(norm, 1.0 / p.normType);
        if (norm > p.maxNorm) {
            const double scale = p.maxNorm / (norm + 1e-7);
            for (int64_t j = 0; j < p.dim; ++j) {
                char* e = row + j * p.colStride * size;
                storeDouble(e, p.dtype, loadDouble(e, p.dtype) * scale);
            }
        }
    }
}

MTIA_SIM_KERNEL_ARGS(mtia_torch_masked_scatter, 1, sizeof(mtiaTorchMaskedScatter));

MTIA_SIM_KERNEL(mtia_torch_masked_scatter) {
    mtiaTorchMaskedScatter p;
    std::memcpy(&p, args[0], sizeof p);
    constexpr const char* kName = "masked_scatter_";
    if (blockIndex(ctx) != 0) return;
    if (p.ndim < 0 || p.ndim > MTIA_TORCH_MAX_DIMS) {
        fault(ctx, kName, "ndim is out of range");
        return;
    }
    const int64_t one = 1;
    if (!checkRange(ctx, kName, "self", p.self.data, p.self.dtype, p.ndim, p.sizes,
                    p.self.strides) ||
        !checkRange(ctx, kName, "mask", p.mask.data, p.mask.dtype, p.ndim, p.sizes,
                    p.mask.strides) ||
        (p.sourceNumel > 0 &&
         !checkRange(ctx, kName, "source", p.source, p.self.dtype, 1, &p.sourceNumel, &one)))
        return;
    const int size = elementSize(p.self.dtype);
    Walker w{p.ndim, p.sizes, {}};
    w.start(0);
    int64_t so = w.offset(p.self.strides), mo = w.offset(p.mask.strides), k = 0;
    for (uint64_t i = 0; i < p.numel; ++i) {
        if (loadAs<uint8_t>(elementAt(p.mask.data, p.mask.dtype, mo)) != 0) {
            if (k >= p.sourceNumel) {
                fault(ctx, kName, "Number of elements of source < number of ones in mask");
                return;
            }
            std::memcpy(elementAt(p.self.data, p.self.dtype, so),
                        reinterpret_cast<const char*>(p.source) + k * size,
                        static_cast<size_t>(size));
            ++k;
        }
        if (i + 1 == p.numel) break;
        const int d = w.next();
        so += w.delta(p.self.strides, d);
        mo += w.delta(p.mask.strides, d);
    }
}
