// Shape and factory kernels: tril/triu, the ranges (arange, linspace) and a same-dtype strided copy
// (cat's pieces, flip with negated strides). The views need no kernel.
#include "dtype_access.h"
#include "shape_params.h"

namespace {

using namespace mtia_kernels;

char* elementAt(uint64_t data, int32_t dtype, int64_t offset) {
    return reinterpret_cast<char*>(data) + offset * elementSize(dtype);
}

// The CPU's linspace for integer outputs steps in double and truncates.
void storeLinspace(const mtiaTorchRange& p, char* out, uint64_t i) {
    const uint64_t halfway = p.numel / 2;
    if (p.dtype == mtiaTorchFloat64 || !isFloating(p.dtype)) {
        const double v = i < halfway ? p.start + p.step * static_cast<double>(i)
                                     : p.end - p.step * static_cast<double>(p.numel - i - 1);
        if (isFloating(p.dtype)) {
            storeDouble(out, p.dtype, v);
        } else {
            storeInt(out, p.dtype, static_cast<int64_t>(v));
        }
        return;
    }
    const float start = static_cast<float>(p.start), end = static_cast<float>(p.end);
    const float step = static_cast<float>(p.step);
    const float v = i < halfway ? start + step * static_cast<float>(i)
                                : end - step * static_cast<float>(p.numel - i - 1);
    storeDouble(out, p.dtype, v);
}

}  // namespace

MTIA_SIM_KERNEL_ARGS(mtia_torch_triangle, 1, sizeof(mtiaTorchTriangle));

MTIA_SIM_KERNEL(mtia_torch_triangle) {
    mtiaTorchTriangle p;
    std::memcpy(&p, args[0], sizeof p);
    constexpr const char* kName = "mtia_torch_triangle";
    if (p.ndim < 2 || p.ndim > MTIA_TORCH_MAX_DIMS) {
        fault(ctx, kName, "ndim is out of range");
        return;
    }
    const int64_t rows = p.sizes[p.ndim - 2], cols = p.sizes[p.ndim - 1];
    const uint64_t matrices = rows * cols == 0 ? 0 : p.numel / static_cast<uint64_t>(rows * cols);
    const uint64_t work = matrices * static_cast<uint64_t>(rows);  // one row per item
    const Range r = blockRange(ctx, work);
    if (r.begin >= r.end) return;
    if (!checkRange(ctx, kName, "out", p.out.data, p.out.dtype, p.ndim, p.sizes, p.out.strides) ||
        !checkRange(ctx, kName, "src", p.src.data, p.src.dtype, p.ndim, p.sizes, p.src.strides))
        return;
    const bool inPlace = p.out.data == p.src.data;
    const int size = elementSize(p.out.dtype);
    const int64_t ocs = p.out.strides[p.ndim - 1], scs = p.src.strides[p.ndim - 1];
    for (uint64_t item = r.begin; item < r.end; ++item) {
        const int64_t row = static_cast<int64_t>(item % static_cast<uint64_t>(rows));
        uint64_t m = item / static_cast<uint64_t>(rows);
        int64_t oo = row * p.out.strides[p.ndim - 2], so = row * p.src.strides[p.ndim - 2];
        for (int d = p.ndim - 3; d >= 0; --d) {
            const auto n = static_cast<uint64_t>(p.sizes[d]);
            const auto c = static_cast<int64_t>(m % n);
            m /= n;
            oo += c * p.out.strides[d];
            so += c * p.src.strides[d];
        }
        // Kept columns: [0, row + diagonal] for tril, [row + diagonal, cols) for triu.
        const int64_t edge = row + p.diagonal;
        const int64_t keepBegin = p.upper ? std::clamp<int64_t>(edge, 0, cols) : 0;
        const int64_t keepEnd = p.upper ? cols : std::clamp<int64_t>(edge + 1, 0, cols);
        char* out = elementAt(p.out.data, p.out.dtype, oo);
        const char* src = elementAt(p.src.data, p.src.dtype, so);
        for (int64_t c = 0; c < cols; ++c) {
            char* o = out + c * ocs * size;
            if (c >= keepBegin && c < keepEnd) {
                if (!inPlace) std::memcpy(o, src + c * scs * size, static_cast<size_t>(size));
            } else {
                std::memset(o, 0, static_cast<size_t>(size));
            }
        }
    }
}

MTIA_SIM_KERNEL_ARGS(mtia_torch_range, 1, sizeof(mtiaTorchRange));

MTIA_SIM_KERNEL(mtia_torch_range) {
    mtiaTorchRange p;
    std::memcpy(&p, args[0], sizeof p);
    constexpr const char* kName = "mtia_torch_range";
    const Range r = blockRange(ctx, p.numel);
    if (r.begin >= r.end) return;
    const int64_t n = static_cast<int64_t>(p.numel);
    if (!checkRange(ctx, kName, "out", p.out, p.dtype, 1, &n, &p.stride)) return;
    if (!p.linear && p.dtype == mtiaTorchFloat32 && p.stride == 1) {
        auto* out = reinterpret_cast<float*>(p.out);
        for (uint64_t i = r.begin; i < r.end; ++i)
            out[i] = static_cast<float>(p.start + p.step * static_cast<double>(i));
        return;
    }
    for (uint64_t i = r.begin; i < r.end; ++i) {
        char* out = elementAt(p.out, p.dtype, static_cast<int64_t>(i) * p.stride);
        if (p.linear) {
            storeLinspace(p, out, i);
        } else if (isFloating(p.dtype)) {
            storeDouble(out, p.dtype, p.start + p.step * static_cast<double>(i));
        } else {
            storeInt(out, p.dtype,
                     static_cast<int64_t>(static_cast<uint64_t>(p.istart) +
                                          static_cast<uint64_t>(p.istep) * i));
        }
    }
}

MTIA_SIM_KERNEL_ARGS(mtia_torch_strided_copy, 1, sizeof(mtiaTorchStridedCopy));

MTIA_SIM_KERNEL(mtia_torch_strided_copy) {
    mtiaTorchStridedCopy p;
    std::memcpy(&p, args[0], sizeof p);
    constexpr const char* kName = "mtia_torch_strided_copy";
    if (p.ndim < 1 || p.ndim > MTIA_TORCH_MAX_DIMS || elementSize(p.dtype) == 0) {
        fault(ctx, kName, "bad parameters");
        return;
    }
    const int64_t inner = p.sizes[p.ndim - 1];
    const uint64_t rows = inner == 0 ? 0 : p.numel / static_cast<uint64_t>(inner);
    const Range r = blockRange(ctx, rows);
    if (r.begin >= r.end) return;
    if (!checkRange(ctx, kName, "out", p.out.data, p.dtype, p.ndim, p.sizes, p.out.strides) ||
        !checkRange(ctx, kName, "src", p.src.data, p.dtype, p.ndim, p.sizes, p.src.strides))
        return;
    const auto size = static_cast<int64_t>(elementSize(p.dtype));
    const int64_t os = p.out.strides[p.ndim - 1] * size, ss = p.src.strides[p.ndim - 1] * size;
    const bool rowsContiguous = os == size && ss == size;
    for (uint64_t row = r.begin; row < r.end; ++row) {
        uint64_t rest = row;
        int64_t oo = 0, so = 0;
        for (int d = p.ndim - 2; d >= 0; --d) {
            const auto n = static_cast<uint64_t>(p.sizes[d]);
            const auto c = static_cast<int64_t>(rest % n);
            rest /= n;
            oo += c * p.out.strides[d];
            so += c * p.src.strides[d];
        }
        char* out = elementAt(p.out.data, p.dtype, oo);
        const char* src = elementAt(p.src.data, p.dtype, so);
        if (rowsContiguous) {
            std::memcpy(out, src, static_cast<size_t>(inner * size));
            continue;
        }
        switch (size) {  // typed loops: the compiler keeps the element in a register
        case 1:
            for (int64_t i = 0; i < inner; ++i) out[i * os] = src[i * ss];
            break;
        case 2:
            for (int64_t i = 0; i < inner; ++i)
                storeAs<uint16_t>(out + i * os, loadAs<uint16_t>(src + i * ss));
            break;
        case 4:
            for (int64_t i = 0; i < inner; ++i)
                storeAs<uint32_t>(out + i * os, loadAs<uint32_t>(src + i * ss));
            break;
        default:
            for (int64_t i = 0; i < inner; ++i)
                storeAs<uint64_t>(out + i * os, loadAs<uint64_t>(src + i * ss));
            break;
        }
    }
}
