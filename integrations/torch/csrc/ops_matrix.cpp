// Matrix products on the device: mm, bmm, addmm, baddbmm, addmv, mv and dot, out of place, in place
// and out=, all launched as one batched product of kernels/matrix_kernels.cpp. torch.matmul,
// nn.Linear and their backwards are compositions of these. Operands that BLAS cannot read in place
// (no unit stride) are copied to contiguous on the device first; an out= tensor that BLAS cannot
// write or that overlaps an operand gets the result through a temporary.
#include "../kernels/matrix_params.h"
#include "device_kernels.h"
#include "gemm_configs.h"
#include "tensor_args.h"

#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <optional>

namespace torch_mtia {
namespace {

// How a tensor is seen as a batch of matrices.
enum class Role { Matrix, Batched, Column, Row };

struct Mat {
    at::Tensor t;
    Role role;
    int64_t rows, cols;
    mtiaTorchMatrixArg arg;
};

mtiaTorchMatrixArg argOf(const at::Tensor& t, Role role) {
    mtiaTorchMatrixArg a{};
    a.data = reinterpret_cast<uint64_t>(t.data_ptr());
    switch (role) {
    case Role::Matrix:  // a 0-dim tensor is 1 x 1 (dot's result)
        a.rowStride = t.dim() == 2 ? t.stride(0) : 1;
        a.colStride = t.dim() == 2 ? t.stride(1) : 1;
        break;
    case Role::Batched:
        a.batchStride = t.stride(0);
        a.rowStride = t.stride(1);
        a.colStride = t.stride(2);
        break;
    case Role::Column:  // [k] as k x 1
        a.rowStride = t.stride(0);
        a.colStride = 1;
        break;
    case Role::Row:  // [k] as 1 x k
        a.rowStride = 1;
        a.colStride = t.stride(0);
        break;
    }
    return a;
}

// The kernel's test (kernels/blas_gemm.h) of whether BLAS reads a matrix in place.
bool blasReadable(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
    const int64_t rsA = rows == 1 ? std::max<int64_t>(1, cols) : rs;
    const int64_t csA = cols == 1 ? 1 : cs;
    if (csA == 1 && rsA >= std::max<int64_t>(1, cols)) return true;
    const int64_t rsB = rows == 1 ? 1 : rs;
    const int64_t csB = cols == 1 ? std::max<int64_t>(1, rows) : cs;
    return rsB == 1 && csB >= std::max<int64_t>(1, rows);
}

bool readable(const Mat& m) {
    return blasReadable(m.rows, m.cols, m.arg.rowStride, m.arg.colStride);
}

// An operand: t seen in role, copied to contiguous on the device when BLAS could not read it.
Mat operand(const at::Tensor& t, Role role, int64_t rows, int64_t cols) {
    Mat m{t, role, rows, cols, argOf(t, role)};
    if (readable(m) || t.numel() == 0) return m;
    m.t = contiguousOnDevice(t, t.scalar_type());
    m.arg = argOf(m.t, role);
    return m;
}

bool overlaps(const at::Tensor& a, const at::Tensor& b) {
    return a.numel() > 0 && b.numel() > 0 &&
           at::get_overlap_status(a, b) != at::MemOverlapStatus::No;
}

// The current device's compute engines (blocks of a launch run one per engine at a time).
uint64_t engineCount() {
    thread_local int device = -1;
    thread_local uint64_t engines = 4;
    int current = 0;
    if (mtiaGetDevice(&current) == mtiaSuccess && current != device) {
        mtiaDeviceProp prop{};
        if (mtiaGetDeviceProperties(&prop, current) == mtiaSuccess && prop.multiProcessorCount > 0)
            engines = static_cast<uint64_t>(prop.multiProcessorCount);
        device = current;
    }
    return engines;
}

// A product ready to launch: its arguments, its grid, and where the result goes.
struct GemmPlan {
    mtiaTorchGemm p{};
    uint32_t blocks = 1;
    bool direct = true;  // false: the kernel writes temp, copied into out afterwards
    at::Tensor temp;
};

// The launch's block count for config (blocks take rows, or with splitCols columns, of the
// outputs). The default: enough work per block that BLAS runs at speed.
uint32_t gemmBlocks(const mtiaTorchGemm& p, at::ScalarType type, const GemmConfig& config) {
    const uint64_t units = static_cast<uint64_t>(p.batch * (config.splitCols != 0 ? p.n : p.m));
    if (config.blocks > 0)
        return static_cast<uint32_t>(std::clamp<uint64_t>(static_cast<uint64_t>(config.blocks), 1,
                                                          std::max<uint64_t>(units, 1)));
    const uint64_t rows = static_cast<uint64_t>(p.batch * p.m);
    const uint64_t flops =
        rows * static_cast<uint64_t>(p.n) * static_cast<uint64_t>(std::max<int64_t>(p.k, 1));
    // float16/bfloat16 blocks each widen all of b: one block per engine keeps that to a few copies.
    const uint64_t most = type == at::kHalf || type == at::kBFloat16 ? engineCount() : 16;
    return static_cast<uint32_t>(
        std::clamp<uint64_t>(flops >> 20, 1, std::min<uint64_t>(most, units)));
}

// out[batch, rows, cols] = beta * self + alpha * a @ b. self (when defined and beta != 0) is
// broadcast to selfSizes ([batch,] rows, cols or, for addmv, rows) by tensorArg's rules; out and
// its role describe where the result goes (any layout: a temporary takes it when needed). config:
// the cut to use, or the shape class's choice when null.
GemmPlan planGemm(const at::Tensor& out, Role outRole, const Mat& a, const Mat& b, int64_t batch,
                  const at::Tensor& self, at::IntArrayRef selfSizes, const c10::Scalar& beta,
                  const c10::Scalar& alpha, const GemmConfig* config) {
    const int64_t m = a.rows, k = a.cols, n = b.cols;
    GemmPlan plan;
    const bool useSelf = self.defined() && !beta.equal(0);
    // Where the kernel writes: out itself when BLAS can write it and it overlaps no operand.
    Mat target{out, outRole, m, n, argOf(out, outRole)};
    bool selfIsOut = false;
    plan.direct = readable(target) && at::has_internal_overlap(out) == at::MemOverlap::No &&
                  !overlaps(out, a.t) && !overlaps(out, b.t);
    mtiaTorchTensorArg selfArg{};
    if (useSelf) {
        selfArg = tensorArg(self, selfSizes);
        if (plan.direct && overlaps(out, self)) {
            const mtiaTorchTensorArg outArg = tensorArg(out, selfSizes);
            selfIsOut =
                selfArg.data == outArg.data &&
                std::equal(selfArg.strides, selfArg.strides + selfSizes.size(), outArg.strides);
            plan.direct = selfIsOut;
        }
    }
    if (!plan.direct) {
        plan.temp = emptyDevice(out.sizes(), out.scalar_type(), out.device());
        target = Mat{plan.temp, outRole, m, n, argOf(plan.temp, outRole)};
        selfIsOut = false;
    }
    mtiaTorchGemm& p = plan.p;
    p.dtype = kernelDtype(out.scalar_type());
    p.useSelf = useSelf ? 1 : 0;
    p.selfIsOut = selfIsOut ? 1 : 0;
    // The CPU's bmm and baddbmm sum small products in order (no BLAS): so do we, to round alike.
    p.sequential = outRole == Role::Batched && m * n * k < 400 ? 1 : 0;
    p.batch = batch;
    p.m = m;
    p.n = n;
    p.k = k;
    setScalar(p.alpha, p.ialpha, alpha);
    setScalar(p.beta, p.ibeta, beta);
    p.a = a.arg;
    p.b = b.arg;
    p.out = target.arg;
    if (useSelf) {
        p.self.data = selfArg.data;
        const size_t nd = selfSizes.size();
        if (nd == 1) {  // addmv: self over the rows
            p.self.rowStride = selfArg.strides[0];
        } else {
            p.self.rowStride = selfArg.strides[nd - 2];
            p.self.colStride = selfArg.strides[nd - 1];
            if (nd == 3) p.self.batchStride = selfArg.strides[0];
        }
    }
    const GemmConfig chosen =
        config != nullptr ? *config : chooseGemmConfig(out.scalar_type(), m, n, k, batch);
    p.splitCols = chosen.splitCols;
    p.tileM = chosen.tileM;
    p.tileN = chosen.tileN;
    p.tileK = chosen.tileK;
    plan.blocks = gemmBlocks(p, out.scalar_type(), chosen);
    return plan;
}

ModuleKernel& gemmKernel() {
    static ModuleKernel kernel("mtia_torch_gemm");
    return kernel;
}

void gemmInto(const at::Tensor& out, Role outRole, const Mat& a, const Mat& b, int64_t batch,
              const at::Tensor& self, at::IntArrayRef selfSizes, const c10::Scalar& beta,
              const c10::Scalar& alpha) {
    if (out.numel() == 0) return;
    const GemmPlan plan =
        planGemm(out, outRole, a, b, batch, self, selfSizes, beta, alpha, nullptr);
    gemmKernel().launch(plan.p, mtiaDim3{plan.blocks, 1, 1});
    if (!plan.direct) copyOnDevice(out, plan.temp);
}

void checkDevice(const at::Tensor& a, const at::Tensor& b, const char* op) {
    TORCH_CHECK(a.device() == b.device(),
                "Expected all tensors to be on the same device, but found at least two devices, ",
                a.device(), " and ", b.device(), "! (when checking argument for ", op, ")");
}

void checkDtypes(const at::Tensor& a, const at::Tensor& b, const char* what) {
    TORCH_CHECK(a.scalar_type() == b.scalar_type(), "expected ", what,
                " to have the same dtype, but got: ", a.scalar_type(), " != ", b.scalar_type());
}

void checkSupported(at::ScalarType type, const char* op) {
    TORCH_CHECK(kernelSupports(type) && type != at::kBool, "\"", op, "\" not implemented for '",
                c10::toString(type), "'");
}

void checkOut(const at::Tensor& out, const at::Tensor& like) {
    TORCH_CHECK(out.scalar_type() == like.scalar_type(), "Expected out tensor to have dtype ",
                like.scalar_type(), ", but got ", out.scalar_type(), " instead");
    checkDevice(out, like, "out");
}

// The checks of mm/addmm (self: mat1 m x k, mat2 k x n).
void checkMm(const at::Tensor& mat1, const at::Tensor& mat2) {
    TORCH_CHECK(mat1.dim() == 2, "self must be a matrix");
    TORCH_CHECK(mat2.dim() == 2, "mat2 must be a matrix");
    TORCH_CHECK(mat1.size(1) == mat2.size(0), "mat1 and mat2 shapes cannot be multiplied (",
                mat1.size(0), "x", mat1.size(1), " and ", mat2.size(0), "x", mat2.size(1), ")");
    checkDevice(mat1, mat2, "mm");
    checkDtypes(mat1, mat2, "mat1 and mat2");
    checkSupported(mat1.scalar_type(), "addmm_impl_cpu_");
}

void checkSelf(const at::Tensor& self, const at::Tensor& like, at::IntArrayRef sizes,
               const char* op) {
    checkDevice(self, like, op);
    TORCH_CHECK(self.scalar_type() == like.scalar_type(),
                "self and mat2 must have the same dtype, but got ", self.scalar_type(), " and ",
                like.scalar_type());
    TORCH_CHECK(self.dim() <= static_cast<int64_t>(sizes.size()) &&
                    at::infer_size(self.sizes(), sizes) == sizes,
                "The expanded size of the tensor must match the existing size: ", op,
                " cannot broadcast self of sizes ", self.sizes(), " to ", sizes);
}

// ---- mm / addmm ----

at::Tensor& addmmOut(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                     const c10::Scalar& beta, const c10::Scalar& alpha, at::Tensor& out) {
    checkMm(mat1, mat2);
    const c10::DeviceGuard guard(mat1.device());
    const std::vector<int64_t> sizes{mat1.size(0), mat2.size(1)};
    if (self.defined()) checkSelf(self, mat1, sizes, "addmm");
    checkOut(out, mat1);
    // out may be self (addmm_): resize_output leaves an out of the right size alone.
    at::native::resize_output(out, sizes);
    gemmInto(out, Role::Matrix, operand(mat1, Role::Matrix, sizes[0], mat1.size(1)),
             operand(mat2, Role::Matrix, mat2.size(0), sizes[1]), 1, self, sizes, beta, alpha);
    return out;
}

at::Tensor addmmDevice(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                       const c10::Scalar& beta, const c10::Scalar& alpha) {
    checkMm(mat1, mat2);
    const c10::DeviceGuard guard(mat1.device());
    at::Tensor out = emptyDevice({mat1.size(0), mat2.size(1)}, mat1.scalar_type(), mat1.device());
    return addmmOut(self, mat1, mat2, beta, alpha, out);
}

at::Tensor& addmmInPlace(at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                         const c10::Scalar& beta, const c10::Scalar& alpha) {
    checkMm(mat1, mat2);
    TORCH_CHECK(self.dim() == 2 && self.size(0) == mat1.size(0) && self.size(1) == mat2.size(1),
                "The input tensor must be a matrix of size ", mat1.size(0), "x", mat2.size(1),
                ", but got a ", self.dim(), "-D tensor of size ", self.sizes());
    return addmmOut(self, mat1, mat2, beta, alpha, self);
}

at::Tensor& mmOut(const at::Tensor& self, const at::Tensor& mat2, at::Tensor& out) {
    return addmmOut(at::Tensor(), self, mat2, 0, 1, out);
}

at::Tensor mmDevice(const at::Tensor& self, const at::Tensor& mat2) {
    return addmmDevice(at::Tensor(), self, mat2, 0, 1);
}

// ---- bmm / baddbmm ----

void checkBmm(const at::Tensor& b1, const at::Tensor& b2) {
    TORCH_CHECK(b1.dim() == 3, "batch1 must be a 3D tensor");
    TORCH_CHECK(b2.dim() == 3, "batch2 must be a 3D tensor");
    TORCH_CHECK(b1.size(0) == b2.size(0),
                "batch1 and batch2 must have same number of batches, got ", b1.size(0), " and ",
                b2.size(0));
    TORCH_CHECK(b1.size(2) == b2.size(1), "Incompatible matrix sizes for bmm (", b1.size(1), "x",
                b1.size(2), " and ", b2.size(1), "x", b2.size(2), ")");
    checkDevice(b1, b2, "bmm");
    checkDtypes(b1, b2, "batch1 and batch2");
    checkSupported(b1.scalar_type(), "bmm");
}

at::Tensor& baddbmmOut(const at::Tensor& self, const at::Tensor& batch1, const at::Tensor& batch2,
                       const c10::Scalar& beta, const c10::Scalar& alpha, at::Tensor& out) {
    checkBmm(batch1, batch2);
    const c10::DeviceGuard guard(batch1.device());
    const std::vector<int64_t> sizes{batch1.size(0), batch1.size(1), batch2.size(2)};
    if (self.defined()) checkSelf(self, batch1, sizes, "baddbmm");
    checkOut(out, batch1);
    at::native::resize_output(out, sizes);
    gemmInto(out, Role::Batched, operand(batch1, Role::Batched, sizes[1], batch1.size(2)),
             operand(batch2, Role::Batched, batch2.size(1), sizes[2]), sizes[0], self, sizes, beta,
             alpha);
    return out;
}

at::Tensor baddbmmDevice(const at::Tensor& self, const at::Tensor& batch1, const at::Tensor& batch2,
                         const c10::Scalar& beta, const c10::Scalar& alpha) {
    checkBmm(batch1, batch2);
    const c10::DeviceGuard guard(batch1.device());
    at::Tensor out = emptyDevice({batch1.size(0), batch1.size(1), batch2.size(2)},
                                 batch1.scalar_type(), batch1.device());
    return baddbmmOut(self, batch1, batch2, beta, alpha, out);
}

at::Tensor& baddbmmInPlace(at::Tensor& self, const at::Tensor& batch1, const at::Tensor& batch2,
                           const c10::Scalar& beta, const c10::Scalar& alpha) {
    checkBmm(batch1, batch2);
    TORCH_CHECK(self.dim() == 3 && self.size(0) == batch1.size(0) &&
                    self.size(1) == batch1.size(1) && self.size(2) == batch2.size(2),
                "Expected self to be of size ", batch1.size(0), "x", batch1.size(1), "x",
                batch2.size(2), ", got ", self.sizes());
    return baddbmmOut(self, batch1, batch2, beta, alpha, self);
}

at::Tensor& bmmOut(const at::Tensor& self, const at::Tensor& mat2, at::Tensor& out) {
    return baddbmmOut(at::Tensor(), self, mat2, 0, 1, out);
}

at::Tensor bmmDevice(const at::Tensor& self, const at::Tensor& mat2) {
    return baddbmmDevice(at::Tensor(), self, mat2, 0, 1);
}

// ---- addmv / mv / dot ----

void checkMv(const at::Tensor& mat, const at::Tensor& vec) {
    TORCH_CHECK(mat.dim() == 2 && vec.dim() == 1, "vector + matrix @ vector expected, got ", 1,
                ", ", mat.dim(), ", ", vec.dim());
    TORCH_CHECK(mat.size(1) == vec.size(0), "size mismatch, got input (", mat.size(0), "), mat (",
                mat.size(0), "x", mat.size(1), "), vec (", vec.size(0), ")");
    checkDevice(mat, vec, "addmv");
    checkDtypes(mat, vec, "mat and vec");
    checkSupported(mat.scalar_type(), "addmv_impl_cpu");
}

at::Tensor& addmvOut(const at::Tensor& self, const at::Tensor& mat, const at::Tensor& vec,
                     const c10::Scalar& beta, const c10::Scalar& alpha, at::Tensor& out) {
    checkMv(mat, vec);
    const c10::DeviceGuard guard(mat.device());
    const std::vector<int64_t> sizes{mat.size(0)};
    if (self.defined()) {
        checkSelf(self, mat, sizes, "addmv");
        TORCH_CHECK(self.dim() <= 1, "vector + matrix @ vector expected, got ", self.dim(),
                    ", 2, 1");
    }
    checkOut(out, mat);
    at::native::resize_output(out, sizes);
    gemmInto(out, Role::Column, operand(mat, Role::Matrix, sizes[0], mat.size(1)),
             operand(vec, Role::Column, vec.size(0), 1), 1, self, sizes, beta, alpha);
    return out;
}

at::Tensor addmvDevice(const at::Tensor& self, const at::Tensor& mat, const at::Tensor& vec,
                       const c10::Scalar& beta, const c10::Scalar& alpha) {
    checkMv(mat, vec);
    const c10::DeviceGuard guard(mat.device());
    at::Tensor out = emptyDevice({mat.size(0)}, mat.scalar_type(), mat.device());
    return addmvOut(self, mat, vec, beta, alpha, out);
}

at::Tensor& addmvInPlace(at::Tensor& self, const at::Tensor& mat, const at::Tensor& vec,
                         const c10::Scalar& beta, const c10::Scalar& alpha) {
    checkMv(mat, vec);
    TORCH_CHECK(self.dim() == 1 && self.size(0) == mat.size(0), "size mismatch, got input (",
                self.sizes(), "), mat (", mat.size(0), "x", mat.size(1), "), vec (", vec.size(0),
                ")");
    return addmvOut(self, mat, vec, beta, alpha, self);
}

at::Tensor& mvOut(const at::Tensor& self, const at::Tensor& vec, at::Tensor& out) {
    return addmvOut(at::Tensor(), self, vec, 0, 1, out);
}

at::Tensor mvDevice(const at::Tensor& self, const at::Tensor& vec) {
    return addmvDevice(at::Tensor(), self, vec, 0, 1);
}

void checkDot(const at::Tensor& self, const at::Tensor& other) {
    TORCH_CHECK(self.dim() == 1 && other.dim() == 1, "1D tensors expected, but got ", self.dim(),
                "D and ", other.dim(), "D tensors");
    TORCH_CHECK(self.scalar_type() == other.scalar_type(),
                "dot : expected both vectors to have same dtype, but found ",
                c10::toString(self.scalar_type()), " and ", c10::toString(other.scalar_type()));
    TORCH_CHECK(self.numel() == other.numel(), "inconsistent tensor size, expected tensor [",
                self.numel(), "] and src [", other.numel(),
                "] to have the same number of elements, but got ", self.numel(), " and ",
                other.numel(), " elements respectively");
    checkDevice(self, other, "dot");
    checkSupported(self.scalar_type(), "dot");
}

at::Tensor& dotOut(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
    checkDot(self, other);
    const c10::DeviceGuard guard(self.device());
    checkOut(out, self);
    at::native::resize_output(out, {});
    // A 0-dim out as the 1 x 1 product of a row and a column.
    gemmInto(out, Role::Matrix, operand(self, Role::Row, 1, self.size(0)),
             operand(other, Role::Column, other.size(0), 1), 1, at::Tensor(), {}, 0, 1);
    return out;
}

at::Tensor dotDevice(const at::Tensor& self, const at::Tensor& other) {
    checkDot(self, other);
    const c10::DeviceGuard guard(self.device());
    at::Tensor out = emptyDevice({}, self.scalar_type(), self.device());
    return dotOut(self, other, out);
}

}  // namespace

GemmParams gemmParams(const at::Tensor& a, const at::Tensor& b, const at::Tensor& out,
                      const GemmConfig& config) {
    checkGemmConfig(config);
    TORCH_CHECK(a.dim() == b.dim() && a.dim() == out.dim() && (a.dim() == 2 || a.dim() == 3),
                "_gemm_params: a, b and out must all be matrices or all batches of matrices, got ",
                a.dim(), "-D, ", b.dim(), "-D and ", out.dim(), "-D");
    if (a.dim() == 2) {
        checkMm(a, b);
    } else {
        checkBmm(a, b);
    }
    checkOut(out, a);
    const c10::DeviceGuard guard(a.device());
    const bool batched = a.dim() == 3;
    const Role role = batched ? Role::Batched : Role::Matrix;
    const int64_t m = a.size(-2), k = a.size(-1), n = b.size(-1);
    const std::vector<int64_t> sizes =
        batched ? std::vector<int64_t>{a.size(0), m, n} : std::vector<int64_t>{m, n};
    TORCH_CHECK(out.sizes() == at::IntArrayRef(sizes), "_gemm_params: out must have size ",
                at::IntArrayRef(sizes), ", got ", out.sizes());
    TORCH_CHECK(a.numel() > 0 && b.numel() > 0 && out.numel() > 0,
                "_gemm_params: empty operands have nothing to tune");
    const Mat ma{a, role, m, k, argOf(a, role)};
    const Mat mb{b, role, k, n, argOf(b, role)};
    TORCH_CHECK(readable(ma), "_gemm_params: a has no unit stride (the operators would copy it)");
    TORCH_CHECK(readable(mb), "_gemm_params: b has no unit stride (the operators would copy it)");
    const GemmPlan plan =
        planGemm(out, role, ma, mb, batched ? a.size(0) : 1, at::Tensor(), sizes, 0, 1, &config);
    TORCH_CHECK(plan.direct,
                "_gemm_params: out must have a unit stride and overlap neither a nor b (the "
                "operators would write a temporary)");
    GemmParams r;
    r.bytes.assign(reinterpret_cast<const char*>(&plan.p), sizeof plan.p);
    // Offsets of the device pointers the pool patches; self is unused (beta == 0).
    r.pointerOffsets = {offsetof(mtiaTorchGemm, a.data), offsetof(mtiaTorchGemm, b.data),
                        offsetof(mtiaTorchGemm, out.data)};
    r.blocks = plan.blocks;
    return r;
}

TORCH_LIBRARY_IMPL(aten, MTIA, m) {
    m.impl("mm", TORCH_FN(mmDevice));
    m.impl("mm.out", TORCH_FN(mmOut));
    m.impl("addmm", TORCH_FN(addmmDevice));
    m.impl("addmm.out", TORCH_FN(addmmOut));
    m.impl("addmm_", TORCH_FN(addmmInPlace));
    m.impl("bmm", TORCH_FN(bmmDevice));
    m.impl("bmm.out", TORCH_FN(bmmOut));
    m.impl("baddbmm", TORCH_FN(baddbmmDevice));
    m.impl("baddbmm.out", TORCH_FN(baddbmmOut));
    m.impl("baddbmm_", TORCH_FN(baddbmmInPlace));
    m.impl("addmv", TORCH_FN(addmvDevice));
    m.impl("addmv.out", TORCH_FN(addmvOut));
    m.impl("addmv_", TORCH_FN(addmvInPlace));
    m.impl("mv", TORCH_FN(mvDevice));
    m.impl("mv.out", TORCH_FN(mvOut));
    m.impl("dot", TORCH_FN(dotDevice));
    m.impl("dot.out", TORCH_FN(dotOut));
}

}  // namespace torch_mtia
