// The foreach operators (torch._foreach_*, what the optimizers' foreach paths call) on the device.
//
// The optimizers' own (add, sub, mul, div with a scalar, a list or a scalar list; lerp; addcmul and
// addcdiv with a scalar or a scalar list; sqrt, neg, reciprocal, exp) call the per-tensor bodies of
// pointwise_ops.h directly, tensor by tensor, inside a PointwiseBatch: each step is what the
// per-tensor operator does (PyTorch's definition of these foreach operators is that loop), without
// a trip through the dispatcher per tensor, and a launch per 16 tensors.
//
// The other pointwise ones run PyTorch's own per-tensor definition (its CompositeExplicitAutograd
// kernel, which calls the per-tensor operator for every tensor of the lists) inside a
// PointwiseBatch, so that the per-tensor pointwise kernels go to the device as one launch per 16
// tensors instead of one launch each. Results are those of the per-tensor operators by
// construction: promotion, scalars, alpha, broadcasting of a scalar tensor and the errors all stay
// theirs.
//
// Only the foreach operators whose per-tensor steps are pointwise kernels are here; copy_, clone,
// zero_ (a memset), norm, max, powsum, mm and lgamma keep PyTorch's definition unbatched.
#include "pointwise.h"
#include "pointwise_ops.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/native/ForeachUtils.h>
#include <torch/library.h>

#include <set>
#include <string>
#include <vector>

namespace torch_mtia {
namespace {

void batchedForeach(const c10::OperatorHandle& op, c10::DispatchKeySet /*keys*/,
                    torch::jit::Stack* stack) {
    PointwiseBatch batch;
    op.callBoxedForDispatchKey(c10::DispatchKey::CompositeExplicitAutograd, *stack);
    batch.finish();
}

using K = OutputKind;
using TensorList = at::TensorList;
using ScalarList = at::ArrayRef<c10::Scalar>;

// step(i) for every tensor index, in one batch; the in-place forms.
template <class Step>
void eachInPlace(size_t n, const Step& step) {
    PointwiseBatch batch;
    for (size_t i = 0; i < n; ++i) step(i);
    batch.finish();
}

// The out-of-place forms: step(i) returns the i-th result.
template <class Step>
std::vector<at::Tensor> eachNew(size_t n, const Step& step) {
    std::vector<at::Tensor> results;
    results.reserve(n);
    PointwiseBatch batch;
    for (size_t i = 0; i < n; ++i) results.push_back(step(i));
    batch.finish();
    return results;
}

// A binary operator's body with a second operand: add/sub take alpha, mul/div ignore it.
enum class Binary { Add, Sub, Mul, Div };

template <Binary B>
at::Tensor binary(K kind, const at::Tensor& out, const at::Tensor& self, const at::Tensor& other,
                  const c10::Scalar& alpha) {
    if constexpr (B == Binary::Add || B == Binary::Sub) {
        return addSub(kind, out, self, other, alpha, B == Binary::Sub);
    } else if constexpr (B == Binary::Mul) {
        return mulAny(kind, out, self, other);
    } else {
        return divAny(kind, out, self, other, std::nullopt);
    }
}

template <Binary B>
void binaryScalarInPlace(TensorList self, const c10::Scalar& scalar) {
    at::native::check_foreach_api_restrictions(self);
    const at::Tensor other = wrapScalar(scalar);
    eachInPlace(self.size(), [&](size_t i) { binary<B>(K::InPlace, self[i], self[i], other, 1); });
}
template <Binary B>
std::vector<at::Tensor> binaryScalar(TensorList self, const c10::Scalar& scalar) {
    at::native::check_foreach_api_restrictions(self);
    const at::Tensor other = wrapScalar(scalar);
    return eachNew(self.size(),
                   [&](size_t i) { return binary<B>(K::Allocate, {}, self[i], other, 1); });
}

template <Binary B>
void binaryListInPlace(TensorList self, TensorList other, const c10::Scalar& alpha) {
    at::native::check_foreach_api_restrictions(self, other);
    eachInPlace(self.size(),
                [&](size_t i) { binary<B>(K::InPlace, self[i], self[i], other[i], alpha); });
}
template <Binary B>
std::vector<at::Tensor> binaryList(TensorList self, TensorList other, const c10::Scalar& alpha) {
    at::native::check_foreach_api_restrictions(self, other);
    return eachNew(self.size(),
                   [&](size_t i) { return binary<B>(K::Allocate, {}, self[i], other[i], alpha); });
}
// mul and div have no alpha.
template <Binary B>
void binaryListNoAlphaInPlace(TensorList self, TensorList other) {
    binaryListInPlace<B>(self, other, 1);
}
template <Binary B>
std::vector<at::Tensor> binaryListNoAlpha(TensorList self, TensorList other) {
    return binaryList<B>(self, other, 1);
}

template <Binary B>
void binaryScalarListInPlace(TensorList self, ScalarList scalars) {
    at::native::check_foreach_api_restrictions(self, scalars);
    eachInPlace(self.size(), [&](size_t i) {
        binary<B>(K::InPlace, self[i], self[i], wrapScalar(scalars[i]), 1);
    });
}
template <Binary B>
std::vector<at::Tensor> binaryScalarList(TensorList self, ScalarList scalars) {
    at::native::check_foreach_api_restrictions(self, scalars);
    return eachNew(self.size(), [&](size_t i) {
        return binary<B>(K::Allocate, {}, self[i], wrapScalar(scalars[i]), 1);
    });
}

template <int32_t Op, bool ToFloat>
void unaryInPlace(TensorList self) {
    at::native::check_foreach_api_restrictions(self);
    eachInPlace(self.size(), [&](size_t i) { unary(K::InPlace, self[i], self[i], Op, ToFloat); });
}
template <int32_t Op, bool ToFloat>
std::vector<at::Tensor> unaryNew(TensorList self) {
    at::native::check_foreach_api_restrictions(self);
    return eachNew(self.size(),
                   [&](size_t i) { return unary(K::Allocate, {}, self[i], Op, ToFloat); });
}

void lerpScalarInPlace(TensorList self, TensorList end, const c10::Scalar& weight) {
    at::native::check_foreach_api_restrictions(self, end);
    eachInPlace(self.size(),
                [&](size_t i) { lerpScalar(K::InPlace, self[i], self[i], end[i], weight); });
}
std::vector<at::Tensor> lerpScalarNew(TensorList self, TensorList end, const c10::Scalar& weight) {
    at::native::check_foreach_api_restrictions(self, end);
    return eachNew(self.size(),
                   [&](size_t i) { return lerpScalar(K::Allocate, {}, self[i], end[i], weight); });
}
void lerpListInPlace(TensorList self, TensorList end, TensorList weights) {
    at::native::check_foreach_api_restrictions(self, end, weights);
    eachInPlace(self.size(),
                [&](size_t i) { lerpTensor(K::InPlace, self[i], self[i], end[i], weights[i]); });
}
std::vector<at::Tensor> lerpListNew(TensorList self, TensorList end, TensorList weights) {
    at::native::check_foreach_api_restrictions(self, end, weights);
    return eachNew(self.size(), [&](size_t i) {
        return lerpTensor(K::Allocate, {}, self[i], end[i], weights[i]);
    });
}

template <bool Divide>
at::Tensor addcOp(K kind, const at::Tensor& out, const at::Tensor& self, const at::Tensor& t1,
                  const at::Tensor& t2, const c10::Scalar& value) {
    return Divide ? addcdiv(kind, out, self, t1, t2, value)
                  : addcmul(kind, out, self, t1, t2, value);
}
template <bool Divide>
void addcScalarInPlace(TensorList self, TensorList t1, TensorList t2, const c10::Scalar& value) {
    at::native::check_foreach_api_restrictions(self, t1, t2);
    eachInPlace(self.size(), [&](size_t i) {
        addcOp<Divide>(K::InPlace, self[i], self[i], t1[i], t2[i], value);
    });
}
template <bool Divide>
std::vector<at::Tensor> addcScalar(TensorList self, TensorList t1, TensorList t2,
                                   const c10::Scalar& value) {
    at::native::check_foreach_api_restrictions(self, t1, t2);
    return eachNew(self.size(), [&](size_t i) {
        return addcOp<Divide>(K::Allocate, {}, self[i], t1[i], t2[i], value);
    });
}
template <bool Divide>
void addcScalarListInPlace(TensorList self, TensorList t1, TensorList t2, ScalarList values) {
    at::native::check_foreach_api_restrictions(self, t1, t2, values);
    eachInPlace(self.size(), [&](size_t i) {
        addcOp<Divide>(K::InPlace, self[i], self[i], t1[i], t2[i], values[i]);
    });
}
template <bool Divide>
std::vector<at::Tensor> addcScalarList(TensorList self, TensorList t1, TensorList t2,
                                       ScalarList values) {
    at::native::check_foreach_api_restrictions(self, t1, t2, values);
    return eachNew(self.size(), [&](size_t i) {
        return addcOp<Divide>(K::Allocate, {}, self[i], t1[i], t2[i], values[i]);
    });
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
    std::set<std::string> direct;
    auto impl = [&](const char* name, auto fn) {
        m.impl(name, fn);
        direct.insert(name);
    };
#define BINARY(name, B)                                                                            \
    impl("_foreach_" name "_.Scalar", TORCH_FN(binaryScalarInPlace<B>));                           \
    impl("_foreach_" name ".Scalar", TORCH_FN(binaryScalar<B>));                                   \
    impl("_foreach_" name "_.ScalarList", TORCH_FN(binaryScalarListInPlace<B>));                   \
    impl("_foreach_" name ".ScalarList", TORCH_FN(binaryScalarList<B>))
    BINARY("add", Binary::Add);
    BINARY("sub", Binary::Sub);
    BINARY("mul", Binary::Mul);
    BINARY("div", Binary::Div);
#undef BINARY
    impl("_foreach_add_.List", TORCH_FN(binaryListInPlace<Binary::Add>));
    impl("_foreach_add.List", TORCH_FN(binaryList<Binary::Add>));
    impl("_foreach_sub_.List", TORCH_FN(binaryListInPlace<Binary::Sub>));
    impl("_foreach_sub.List", TORCH_FN(binaryList<Binary::Sub>));
    impl("_foreach_mul_.List", TORCH_FN(binaryListNoAlphaInPlace<Binary::Mul>));
    impl("_foreach_mul.List", TORCH_FN(binaryListNoAlpha<Binary::Mul>));
    impl("_foreach_div_.List", TORCH_FN(binaryListNoAlphaInPlace<Binary::Div>));
    impl("_foreach_div.List", TORCH_FN(binaryListNoAlpha<Binary::Div>));
#define UNARY(name, op, toFloat)                                                                   \
    impl("_foreach_" name "_", TORCH_FN((unaryInPlace<op, toFloat>)));                             \
    impl("_foreach_" name, TORCH_FN((unaryNew<op, toFloat>)))
    UNARY("sqrt", mtiaTorchPwSqrt, true);
    UNARY("neg", mtiaTorchPwNeg, false);
    UNARY("reciprocal", mtiaTorchPwReciprocal, true);
    UNARY("exp", mtiaTorchPwExp, true);
#undef UNARY
    impl("_foreach_lerp_.Scalar", TORCH_FN(lerpScalarInPlace));
    impl("_foreach_lerp.Scalar", TORCH_FN(lerpScalarNew));
    impl("_foreach_lerp_.List", TORCH_FN(lerpListInPlace));
    impl("_foreach_lerp.List", TORCH_FN(lerpListNew));
    impl("_foreach_addcmul_.Scalar", TORCH_FN(addcScalarInPlace<false>));
    impl("_foreach_addcmul.Scalar", TORCH_FN(addcScalar<false>));
    impl("_foreach_addcmul_.ScalarList", TORCH_FN(addcScalarListInPlace<false>));
    impl("_foreach_addcmul.ScalarList", TORCH_FN(addcScalarList<false>));
    impl("_foreach_addcdiv_.Scalar", TORCH_FN(addcScalarInPlace<true>));
    impl("_foreach_addcdiv.Scalar", TORCH_FN(addcScalar<true>));
    impl("_foreach_addcdiv_.ScalarList", TORCH_FN(addcScalarListInPlace<true>));
    impl("_foreach_addcdiv.ScalarList", TORCH_FN(addcScalarList<true>));

    // The rest of the batched operators' overloads: PyTorch's definition inside a batch.
    for (const c10::OperatorName& name : c10::Dispatcher::singleton().getAllOpNames()) {
        if (name.name.rfind("aten::_foreach_", 0) != 0 ||
            name.overload_name.find("out") != std::string::npos) {
            continue;
        }
        const std::string op = name.name.substr(6);  // without "aten::"
        const std::string base = op.back() == '_' ? op.substr(0, op.size() - 1) : op;
        bool batched = false;
        for (const char* b : kBatched) batched = batched || base == b;
        const std::string full = name.overload_name.empty() ? op : op + "." + name.overload_name;
        if (!batched || direct.count(full) != 0) continue;
        m.impl(full.c_str(), torch::CppFunction::makeFromBoxedFunction<&batchedForeach>());
    }
}

}  // namespace torch_mtia
