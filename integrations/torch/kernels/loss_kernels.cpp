// The negative log likelihood loss, forward and backward, on the simulated device. A target out of
// range faults the launch (the CPU raises "Target t is out of bounds."; a device kernel cannot
// raise, as CUDA's device-side assert cannot).
#include "dtype_access.h"
#include "loss_params.h"

namespace {

using namespace mtia_kernels;

constexpr const char* kNll = "mtia_torch_nll_loss";

double ld(uint64_t data, int64_t i, int32_t dtype) {
    return loadDouble(reinterpret_cast<const char*>(data) + i * elementSize(dtype), dtype);
}
void st(uint64_t data, int64_t i, int32_t dtype, double v) {
    storeDouble(reinterpret_cast<char*>(data) + i * elementSize(dtype), dtype, v);
}

// The target of item i (n * spatial + s), or false after faulting when out of range.
bool targetOf(const mtiaKernelContext* ctx, const mtiaTorchNllLoss& p, int64_t i, int64_t& t) {
    t = loadInt(reinterpret_cast<const char*>(p.target) + i * elementSize(p.targetDtype),
                p.targetDtype);
    if (t == p.ignoreIndex || (t >= 0 && t < p.classes)) return true;
    char what[96];
    std::snprintf(what, sizeof what, "Target %lld is out of bounds.", static_cast<long long>(t));
    return fault(ctx, kNll, what);
}

double weightOf(const mtiaTorchNllLoss& p, int64_t t) {
    return p.weight ? ld(p.weight, t, p.wDtype) : 1.0;
}

int64_t inputIndex(const mtiaTorchNllLoss& p, int64_t i, int64_t c) {
    const int64_t n = i / p.spatial, s = i % p.spatial;
    return (n * p.classes + c) * p.spatial + s;
}

void forwardItems(const mtiaKernelContext* ctx, const mtiaTorchNllLoss& p, Range r) {
    for (uint64_t k = r.begin; k < r.end; ++k) {
        const auto i = static_cast<int64_t>(k);
        int64_t t;
        if (!targetOf(ctx, p, i, t)) return;
        const double v = t == p.ignoreIndex
                             ? 0.0
                             : -weightOf(p, t) * ld(p.input, inputIndex(p, i, t), p.inDtype);
        st(p.out, i, p.outDtype, v);
    }
}

// The reduced forward, in one block and in order: the sum of the weighted losses and of the
// weights (the total), divided for the mean.
void forwardReduced(const mtiaKernelContext* ctx, const mtiaTorchNllLoss& p) {
    const int64_t items = p.batch * p.spatial;
    double loss = 0, total = 0;
    for (int64_t i = 0; i < items; ++i) {
        int64_t t;
        if (!targetOf(ctx, p, i, t)) return;
        if (t == p.ignoreIndex) continue;
        const double w = weightOf(p, t);
        loss -= w * ld(p.input, inputIndex(p, i, t), p.inDtype);
        total += w;
    }
    st(p.out, 0, p.outDtype, p.reduction == mtiaTorchReductionMean ? loss / total : loss);
    st(p.totalWeight, 0, p.twDtype, total);
}

void backwardItems(const mtiaKernelContext* ctx, const mtiaTorchNllLoss& p, Range r) {
    double g = 0;
    if (p.reduction != mtiaTorchReductionNone) {
        g = ld(p.gradOut, 0, p.gDtype);
        if (p.reduction == mtiaTorchReductionMean) g /= ld(p.totalWeight, 0, p.twDtype);
    }
    for (uint64_t k = r.begin; k < r.end; ++k) {
        const auto i = static_cast<int64_t>(k);
        int64_t t;
        if (!targetOf(ctx, p, i, t)) return;
        const double gi = p.reduction == mtiaTorchReductionNone ? ld(p.gradOut, i, p.gDtype) : g;
        for (int64_t c = 0; c < p.classes; ++c) {
            const double v = (c == t && t != p.ignoreIndex) ? -weightOf(p, t) * gi : 0.0;
            st(p.gradInput, inputIndex(p, i, c), p.outDtype, v);
        }
    }
}

bool operandsOk(const mtiaKernelContext* ctx, const mtiaTorchNllLoss& p) {
    const int64_t unit[1] = {1}, all[1] = {p.batch * p.classes * p.spatial},
                  items[1] = {p.batch * p.spatial}, classes[1] = {p.classes}, one[1] = {1};
    const bool none = p.reduction == mtiaTorchReductionNone;
    if (!checkRange(ctx, kNll, "input", p.input, p.inDtype, 1, all, unit) ||
        !checkRange(ctx, kNll, "target", p.target, p.targetDtype, 1, items, unit) ||
        (p.weight && !checkRange(ctx, kNll, "weight", p.weight, p.wDtype, 1, classes, unit)))
        return false;
    if (!p.backward) {
        return checkRange(ctx, kNll, "out", p.out, p.outDtype, 1, none ? items : one, unit) &&
               (none ||
                checkRange(ctx, kNll, "totalWeight", p.totalWeight, p.twDtype, 1, one, unit));
    }
    return checkRange(ctx, kNll, "gradInput", p.gradInput, p.outDtype, 1, all, unit) &&
           checkRange(ctx, kNll, "gradOut", p.gradOut, p.gDtype, 1, none ? items : one, unit) &&
           (p.reduction != mtiaTorchReductionMean ||
            checkRange(ctx, kNll, "totalWeight", p.totalWeight, p.twDtype, 1, one, unit));
}

}  // namespace

MTIA_SIM_KERNEL_ARGS(mtia_torch_nll_loss, 1, sizeof(mtiaTorchNllLoss));

MTIA_SIM_KERNEL(mtia_torch_nll_loss) {
    mtiaTorchNllLoss p;
    std::memcpy(&p, args[0], sizeof p);
    if (p.reduction < mtiaTorchReductionNone || p.reduction > mtiaTorchReductionSum ||
        p.batch < 0 || p.classes < 0 || p.spatial <= 0) {
        fault(ctx, kNll, "bad parameters");
        return;
    }
    const bool reduced = !p.backward && p.reduction != mtiaTorchReductionNone;
    if (reduced) {
        if (blockIndex(ctx) != 0 || !operandsOk(ctx, p)) return;
        forwardReduced(ctx, p);
        return;
    }
    const Range r = blockRange(ctx, static_cast<uint64_t>(p.batch * p.spatial));
    if (r.begin >= r.end) return;
    if (!operandsOk(ctx, p)) return;
    if (p.backward) {
        backwardItems(ctx, p, r);
    } else {
        forwardItems(ctx, p, r);
    }
}
