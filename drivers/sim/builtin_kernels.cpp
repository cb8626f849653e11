// The built-in module: the f32 kernels of ABI.md. Each computes its whole
// range for any grid; block b of G (blocks flattened x fastest) takes the b-th
// contiguous share, so a larger grid only splits the work. Every block checks
// the memory it touches with isDeviceRange before touching it.
#include "clock.hpp"
#include "kernels.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace mtia::sim {
namespace {

template <class T>
T arg(void** args, int i) {
    T value;
    std::memcpy(&value, args[i], sizeof(T));
    return value;
}

uint64_t blockCount(const mtiaKernelContext* ctx) {
    return uint64_t{ctx->gridDim.x} * ctx->gridDim.y * ctx->gridDim.z;
}

uint64_t blockIndex(const mtiaKernelContext* ctx) {
    return ctx->blockIdx.x + uint64_t{ctx->gridDim.x} *
                                 (ctx->blockIdx.y + uint64_t{ctx->gridDim.y} * ctx->blockIdx.z);
}

struct Share {
    uint64_t begin, end;
    bool empty() const { return begin >= end; }
    uint64_t size() const { return end - begin; }
};

// This block's contiguous part of n items.
Share blockShare(const mtiaKernelContext* ctx, uint64_t n) {
    const uint64_t blocks = blockCount(ctx);
    const uint64_t chunk = n / blocks + (n % blocks != 0 ? 1 : 0);
    const uint64_t begin = std::min(n, blockIndex(ctx) * chunk);
    return {begin, std::min(n, begin + chunk)};
}

// Faults the launch unless [p + first, p + first + count) floats are device memory this device may
// touch.
bool checkFloats(const mtiaKernelContext* ctx, const char* name, const float* p, uint64_t first,
                 uint64_t count) {
    if (count == 0) return true;
    if (first > UINT64_MAX / sizeof(float) || count > UINT64_MAX / sizeof(float) - first) {
        ctx->fault(ctx,
                   fmt::format("illegal address: {} with {} elements overflows the address space",
                               name, first + count)
                       .c_str());
        return false;
    }
    const auto addr = reinterpret_cast<uintptr_t>(p) + first * sizeof(float);
    const uint64_t bytes = count * sizeof(float);
    if (reinterpret_cast<uintptr_t>(p) > UINTPTR_MAX - first * sizeof(float) ||
        !ctx->isDeviceRange(ctx, reinterpret_cast<const void*>(addr), bytes)) {
        ctx->fault(
            ctx, fmt::format(
                     "illegal address: {}={} [{} bytes at {:#x}] is not device memory of device {} "
                     "or of a peer it may access",
                     name, static_cast<const void*>(p), bytes, addr, ctx->device)
                     .c_str());
        return false;
    }
    return true;
}

bool checkProduct(const mtiaKernelContext* ctx, uint64_t a, uint64_t b, uint64_t& product) {
    if (a != 0 && b > UINT64_MAX / sizeof(float) / a) {
        ctx->fault(
            ctx,
            fmt::format("illegal address: matrix of {} x {} elements overflows the address space",
                        a, b)
                .c_str());
        return false;
    }
    product = a * b;
    return true;
}

void fill_f32(const mtiaKernelContext* ctx, void** args) {
    auto* dst = arg<float*>(args, 0);
    const auto value = arg<float>(args, 1);
    const Share s = blockShare(ctx, arg<uint64_t>(args, 2));
    if (s.empty() || !checkFloats(ctx, "dst", dst, s.begin, s.size())) return;
    for (uint64_t i = s.begin; i < s.end; ++i) dst[i] = value;
}

void copy_f32(const mtiaKernelContext* ctx, void** args) {
    auto* dst = arg<float*>(args, 0);
    const auto* src = arg<const float*>(args, 1);
    const Share s = blockShare(ctx, arg<uint64_t>(args, 2));
    if (s.empty() || !checkFloats(ctx, "dst", dst, s.begin, s.size()) ||
        !checkFloats(ctx, "src", src, s.begin, s.size())) {
        return;
    }
    std::memmove(dst + s.begin, src + s.begin, s.size() * sizeof(float));
}

template <class Op>
void binary(const mtiaKernelContext* ctx, void** args, Op op) {
    auto* out = arg<float*>(args, 0);
    const auto* a = arg<const float*>(args, 1);
    const auto* b = arg<const float*>(args, 2);
    const Share s = blockShare(ctx, arg<uint64_t>(args, 3));
    if (s.empty() || !checkFloats(ctx, "out", out, s.begin, s.size()) ||
        !checkFloats(ctx, "a", a, s.begin, s.size()) ||
        !checkFloats(ctx, "b", b, s.begin, s.size())) {
        return;
    }
    for (uint64_t i = s.begin; i < s.end; ++i) out[i] = op(a[i], b[i]);
}

void add_f32(const mtiaKernelContext* ctx, void** args) {
    binary(ctx, args, [](float x, float y) { return x + y; });
}

void mul_f32(const mtiaKernelContext* ctx, void** args) {
    binary(ctx, args, [](float x, float y) { return x * y; });
}

void scale_f32(const mtiaKernelContext* ctx, void** args) {
    auto* out = arg<float*>(args, 0);
    const auto* a = arg<const float*>(args, 1);
    const auto s = arg<float>(args, 2);
    const Share share = blockShare(ctx, arg<uint64_t>(args, 3));
    if (share.empty() || !checkFloats(ctx, "out", out, share.begin, share.size()) ||
        !checkFloats(ctx, "a", a, share.begin, share.size())) {
        return;
    }
    for (uint64_t i = share.begin; i < share.end; ++i) out[i] = a[i] * s;
}

void axpy_f32(const mtiaKernelContext* ctx, void** args) {
    auto* y = arg<float*>(args, 0);
    const auto a = arg<float>(args, 1);
    const auto* x = arg<const float*>(args, 2);
    const Share s = blockShare(ctx, arg<uint64_t>(args, 3));
    if (s.empty() || !checkFloats(ctx, "y", y, s.begin, s.size()) ||
        !checkFloats(ctx, "x", x, s.begin, s.size())) {
        return;
    }
    for (uint64_t i = s.begin; i < s.end; ++i) y[i] = a * x[i] + y[i];
}

void relu_f32(const mtiaKernelContext* ctx, void** args) {
    auto* out = arg<float*>(args, 0);
    const auto* a = arg<const float*>(args, 1);
    const Share s = blockShare(ctx, arg<uint64_t>(args, 2));
    if (s.empty() || !checkFloats(ctx, "out", out, s.begin, s.size()) ||
        !checkFloats(ctx, "a", a, s.begin, s.size())) {
        return;
    }
    // NaN stays NaN, as in PyTorch.
    for (uint64_t i = s.begin; i < s.end; ++i) out[i] = a[i] < 0.0f ? 0.0f : a[i];
}

void reduce_sum_f32(const mtiaKernelContext* ctx, void** args) {
    // Blocks cannot combine partial sums without atomics or a second pass, so the first block sums
    // everything; the compensated double sum keeps the result exact to float precision for any n.
    if (blockIndex(ctx) != 0) return;
    auto* out = arg<float*>(args, 0);
    const auto* a = arg<const float*>(args, 1);
    const auto n = arg<uint64_t>(args, 2);
    if (n == 0 || !checkFloats(ctx, "out", out, 0, 1) || !checkFloats(ctx, "a", a, 0, n)) return;
    double sum = 0.0;
    double compensation = 0.0;
    for (uint64_t i = 0; i < n; ++i) {
        const double x = a[i];
        const double t = sum + x;
        compensation += (std::abs(sum) >= std::abs(x)) ? (sum - t) + x : (x - t) + sum;
        sum = t;
    }
    *out = static_cast<float>(sum + compensation);
}

void matmul_f32(const mtiaKernelContext* ctx, void** args) {
    auto* c = arg<float*>(args, 0);
    const auto* a = arg<const float*>(args, 1);
    const auto* b = arg<const float*>(args, 2);
    const auto m = arg<uint64_t>(args, 3);
    const auto n = arg<uint64_t>(args, 4);
    const auto k = arg<uint64_t>(args, 5);
    const Share rows = blockShare(ctx, m);
    if (rows.empty() || n == 0) return;
    uint64_t cSize = 0, aSize = 0, bSize = 0;
    if (!checkProduct(ctx, m, n, cSize) || !checkProduct(ctx, m, k, aSize) ||
        !checkProduct(ctx, k, n, bSize))
        return;
    if (!checkFloats(ctx, "c", c, rows.begin * n, rows.size() * n) ||
        !checkFloats(ctx, "a", a, rows.begin * k, rows.size() * k) ||
        !checkFloats(ctx, "b", b, 0, bSize)) {
        return;
    }
    // i-p-j order walks b and c row by row, which the cache likes.
    for (uint64_t i = rows.begin; i < rows.end; ++i) {
        float* ci = c + i * n;
        std::fill(ci, ci + n, 0.0f);
        for (uint64_t p = 0; p < k; ++p) {
            const float aip = a[i * k + p];
            const float* bp = b + p * n;
            for (uint64_t j = 0; j < n; ++j) ci[j] += aip * bp[j];
        }
    }
}

void sleep_us(const mtiaKernelContext* ctx, void** args) {
    // One sleep per launch, whatever the grid: the caller asks for a duration, not for
    // block-seconds.
    if (blockIndex(ctx) != 0) return;
    const auto us = arg<uint64_t>(args, 0);
    sleepNs(us > UINT64_MAX / 1000 ? UINT64_MAX : us * 1000);
}

// The empty kernel: what launch-overhead benchmarks and ordering tests enqueue.
void noop(const mtiaKernelContext*, void**) {}

Kernel makeBuiltin(const char* name, mtiaSimKernelFn fn, std::initializer_list<uint32_t> sizes) {
    mtiaSimKernelArgs desc{};
    desc.structSize = sizeof(desc);
    desc.count = static_cast<uint32_t>(sizes.size());
    std::copy(sizes.begin(), sizes.end(), desc.sizes);
    Kernel kernel;
    std::string error;
    layoutArguments(desc, kernel, error);  // cannot fail: fixed, valid descriptors
    kernel.name = name;
    kernel.fn = fn;
    return kernel;
}

constexpr uint32_t kPtr = sizeof(void*);
constexpr uint32_t kF32 = sizeof(float);
constexpr uint32_t kU64 = sizeof(uint64_t);

}  // namespace

std::span<const Kernel> builtinKernels() {
    // Leaky: kernels may still run on engine threads while static destructors run at exit.
    static const std::vector<Kernel>* kernels = new std::vector<Kernel>{
        makeBuiltin("fill_f32", fill_f32, {kPtr, kF32, kU64}),
        makeBuiltin("copy_f32", copy_f32, {kPtr, kPtr, kU64}),
        makeBuiltin("add_f32", add_f32, {kPtr, kPtr, kPtr, kU64}),
        makeBuiltin("mul_f32", mul_f32, {kPtr, kPtr, kPtr, kU64}),
        makeBuiltin("scale_f32", scale_f32, {kPtr, kPtr, kF32, kU64}),
        makeBuiltin("axpy_f32", axpy_f32, {kPtr, kF32, kPtr, kU64}),
        makeBuiltin("relu_f32", relu_f32, {kPtr, kPtr, kU64}),
        makeBuiltin("reduce_sum_f32", reduce_sum_f32, {kPtr, kPtr, kU64}),
        makeBuiltin("matmul_f32", matmul_f32, {kPtr, kPtr, kPtr, kU64, kU64, kU64}),
        makeBuiltin("sleep_us", sleep_us, {kU64}),
        makeBuiltin("noop", noop, {}),
    };
    return *kernels;
}

}  // namespace mtia::sim
