// MTIA matrix products (mm, addmm) and sum. Float32 contiguous operands use the runtime's built-in
// kernels (matmul_f32, reduce_sum_f32); other cases run the module's kernels. The elementwise
// operators are in ops_pointwise.cpp.
#include "device_kernels.h"
#include "pointwise.h"
#include "mtia_check.h"
#include "streams.h"
#include "tensor_args.h"

#include <ATen/ExpandUtils.h>
#include <ATen/Functions.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/OpMathType.h>
#include <ATen/WrapDimUtilsMulti.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

namespace torch_mtia {
namespace {

void checkOperands(const at::Tensor& self, const at::Tensor& other) {
    TORCH_CHECK(isCpuScalar(other) || other.device() == self.device(),
                "torch_mtia: expected all tensors on ", self.device(), ", got one on ",
                other.device());
}

bool builtinEligible(const at::Tensor& out, const at::Tensor& a, const at::Tensor& b) {
    return out.scalar_type() == at::kFloat && a.scalar_type() == at::kFloat &&
           b.scalar_type() == at::kFloat && out.is_contiguous() && a.is_contiguous() &&
           b.is_contiguous() && a.sizes() == out.sizes() && b.sizes() == out.sizes() && isDevice(b);
}

// out = sa * a + sb * b over out's shape (a and b broadcast), or a * b when multiply.
void binaryInto(const at::Tensor& out, const at::Tensor& a, const at::Tensor& b, bool multiply,
                const c10::Scalar& sa, const c10::Scalar& sb) {
    if (out.numel() == 0) return;
    const bool unitScales = sa.equal(1) && sb.equal(1);
    if (unitScales && builtinEligible(out, a, b)) {
        void* o = out.data_ptr();
        const void* x = a.data_ptr();
        const void* y = b.data_ptr();
        const uint64_t n = static_cast<uint64_t>(out.numel());
        launchBuiltin(multiply ? "mul_f32" : "add_f32", {&o, &x, &y, &n}, n);
        return;
    }
    mtiaTorchElementwise p =
        elementwiseOver(multiply ? mtiaTorchOpMul : mtiaTorchOpLinComb, out, out.sizes());
    p.a = tensorArg(a, out.sizes());
    p.b = tensorArg(b, out.sizes());
    setScalar(p.alpha, p.ialpha, sa);
    setScalar(p.beta, p.ibeta, sb);
    launchElementwise(p);
}

// Scalar operands become 0-dim device tensors written by a fill kernel (not a host copy, which a
// graph capture would refuse), so every form runs through binaryInto.
at::Tensor scalarTensor(const c10::Scalar& s, at::ScalarType type, const at::Tensor& like) {
    at::Tensor d = emptyDevice({}, type, like.device());
    d.fill_(s);
    return d;
}

// A CPU scalar operand becomes a 0-dim device tensor of the op's computation type: converted first,
// as the CPU converts a wrapped scalar to the common dtype before the arithmetic, so float32 and
// float16 results round as the CPU's do.
at::Tensor onDevice(const at::Tensor& t, const at::Tensor& like, at::ScalarType type) {
    if (!isCpuScalar(t)) return t;
    return scalarTensor(t.to(type).item(), type, like);
}

at::Tensor matrixProduct(const at::Tensor& self, const at::Tensor& mat2) {
    TORCH_CHECK(self.dim() == 2 && mat2.dim() == 2, "torch_mtia: mm expects 2-D tensors, got ",
                self.dim(), "-D and ", mat2.dim(), "-D");
    TORCH_CHECK(self.size(1) == mat2.size(0), "torch_mtia: mm shapes cannot be multiplied (",
                self.sizes(), " and ", mat2.sizes(), ")");
    checkOperands(self, mat2);
    TORCH_CHECK(self.scalar_type() == mat2.scalar_type(),
                "torch_mtia: mm expects operands of one dtype, got ", self.scalar_type(), " and ",
                mat2.scalar_type());
    const c10::DeviceGuard guard(self.device());
    if (self.scalar_type() != at::kFloat) {
        // Only matmul_f32 is built in: other dtypes compute on the host, after the stream's work.
        return at::mm(self.cpu(), mat2.cpu()).to(self.device());
    }
    const uint64_t m = static_cast<uint64_t>(self.size(0)), k = static_cast<uint64_t>(self.size(1)),
                   n = static_cast<uint64_t>(mat2.size(1));
    at::Tensor out = emptyDevice({self.size(0), mat2.size(1)}, at::kFloat, self.device());
    if (out.numel() == 0) return out;
    if (k == 0) return out.zero_();
    const at::Tensor a = contiguousOnDevice(self, at::kFloat);
    const at::Tensor b = contiguousOnDevice(mat2, at::kFloat);
    void* c = out.data_ptr();
    const void* pa = a.data_ptr();
    const void* pb = b.data_ptr();
    launchBuiltin("matmul_f32", {&c, &pa, &pb, &m, &n, &k}, m * n);
    return out;
}

at::Tensor addmm(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                 const c10::Scalar& beta, const c10::Scalar& alpha) {
    checkOperands(mat1, self);
    const c10::DeviceGuard guard(mat1.device());
    at::Tensor product = matrixProduct(mat1, mat2);
    const bool ignoreSelf = beta.equal(0);  // self is ignored, NaN included, as in PyTorch
    if (ignoreSelf && alpha.equal(1)) return product;
    at::Tensor out = emptyDevice(product.sizes(), product.scalar_type(), product.device());
    if (out.numel() == 0) return out;
    if (ignoreSelf) {  // alpha * product alone (0 * an infinite product would be NaN)
        mtiaTorchElementwise p = elementwiseOver(mtiaTorchOpScale, out, out.sizes());
        p.a = tensorArg(product, out.sizes());
        setScalar(p.alpha, p.ialpha, alpha);
        launchElementwise(p);
    } else {
        binaryInto(out, onDevice(self, product, product.scalar_type()), product, false, beta,
                   alpha);
    }
    return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, MTIA, m) {
    m.impl("mm", TORCH_FN(matrixProduct));
    m.impl("addmm", TORCH_FN(addmm));
}

}  // namespace torch_mtia
