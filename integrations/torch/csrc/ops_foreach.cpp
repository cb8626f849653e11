// The foreach operators (torch._foreach_*, what the optimizers' foreach paths call) on the device:
// each runs PyTorch's own per-tensor definition (its CompositeExplicitAutograd kernel, which calls
// the per-tensor operator for every tensor of the lists) inside a PointwiseBatch, so that the
// per-tensor pointwise kernels go to the device as one launch per 16 tensors instead of one launch
// each. Results are those of the per-tensor operators by construction: promotion, scalars, alpha,
// broadcasting of a scalar tensor and the errors all stay theirs.
//
// Only the foreach operators whose per-tensor steps are pointwise kernels are here; copy_, clone,
// zero_ (a memset), norm, max, powsum, mm and lgamma keep PyTorch's definition unbatched.
#include "pointwise.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <string>

namespace torch_mtia {
namespace {

void batchedForeach(const c10::OperatorHandle& op, c10::DispatchKeySet /*keys*/,
                    torch::jit::Stack* stack) {
    PointwiseBatch batch;
    op.callBoxedForDispatchKey(c10::DispatchKey::CompositeExplicitAutograd, *stack);
    batch.finish();
}

// The foreach operators (all overloads of each) whose per-tensor steps are pointwise kernels.
constexpr const char* kBatched[] = {
    "_foreach_abs",       "_foreach_acos",    "_foreach_asin",       "_foreach_atan",
    "_foreach_ceil",      "_foreach_cos",     "_foreach_cosh",       "_foreach_erf",
    "_foreach_erfc",      "_foreach_exp",     "_foreach_expm1",      "_foreach_floor",
    "_foreach_frac",      "_foreach_log",     "_foreach_log10",      "_foreach_log1p",
    "_foreach_log2",      "_foreach_neg",     "_foreach_reciprocal", "_foreach_round",
    "_foreach_rsqrt",     "_foreach_sigmoid", "_foreach_sign",       "_foreach_sin",
    "_foreach_sinh",      "_foreach_sqrt",    "_foreach_tan",        "_foreach_tanh",
    "_foreach_trunc",     "_foreach_add",     "_foreach_sub",        "_foreach_mul",
    "_foreach_div",       "_foreach_addcmul", "_foreach_addcdiv",    "_foreach_clamp_max",
    "_foreach_clamp_min", "_foreach_maximum", "_foreach_minimum",    "_foreach_lerp",
    "_foreach_pow"};

}  // namespace

// Registered for every overload of those operators, functional and in place; the out= overloads
// (functionalization's) stay PyTorch's, which call these.
TORCH_LIBRARY_IMPL(aten, MTIA, m) {
    for (const c10::OperatorName& name : c10::Dispatcher::singleton().getAllOpNames()) {
        if (name.name.rfind("aten::_foreach_", 0) != 0 ||
            name.overload_name.find("out") != std::string::npos) {
            continue;
        }
        const std::string op = name.name.substr(6);  // without "aten::"
        const std::string base = op.back() == '_' ? op.substr(0, op.size() - 1) : op;
        bool batched = false;
        for (const char* b : kBatched) batched = batched || base == b;
        if (!batched) continue;
        const std::string full = name.overload_name.empty() ? op : op + "." + name.overload_name;
        m.impl(full.c_str(), torch::CppFunction::makeFromBoxedFunction<&batchedForeach>());
    }
}

}  // namespace torch_mtia
