// Reductions (sum, mean, prod, max/min, amax/amin, argmax/argmin, var/std, vector norms, all/any,
// logsumexp), scans (cumsum, cumprod) and softmax on the device: the CPU's dtype rules and argument
// checks here, the arithmetic in kernels/reduce_kernels.cpp. Outputs are contiguous, as the CPU's.
#include "device_kernels.h"
#include "tensor_args.h"

#include "../kernels/reduce_params.h"

#include <ATen/Functions.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/WrapDimUtilsMulti.h>
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <bitset>
#include <cmath>
#include <tuple>

namespace torch_mtia::reduce_ops {
namespace {

using DimMask = std::bitset<64>;

// The reduced dims: all of them for dim=None or an empty list, as the CPU's reductions.
DimMask maskOf(const at::Tensor& self, at::OptionalIntArrayRef dims) {
    if (!dims || dims->empty()) return DimMask().set();
    return at::dim_list_to_bitset(*dims, self.dim());
}

DimMask maskOfDim(const at::Tensor& self, int64_t dim) {
    DimMask m;
    if (self.dim() > 0) m.set(at::maybe_wrap_dim(dim, self.dim()));
    return m;
}

std::vector<int64_t> reducedSizes(const at::Tensor& self, const DimMask& mask, bool keepdim) {
    std::vector<int64_t> sizes;
    for (int64_t d = 0; d < self.dim(); ++d) {
        if (!mask[d]) {
            sizes.push_back(self.size(d));
        } else if (keepdim) {
            sizes.push_back(1);
        }
    }
    return sizes;
}

// One launch of the reduction kernel: out and aux (either may be undefined) have the shape
// reducedSizes(self, mask, keepdim), any strides.
void launchReduce(int32_t op, const at::Tensor& self, const DimMask& mask, bool keepdim,
                  const at::Tensor& out, const at::Tensor& aux, double scalar = 0,
                  bool takeSqrt = false) {
    const int64_t ndim = self.dim();
    TORCH_CHECK(ndim <= MTIA_TORCH_MAX_DIMS, "torch_mtia: reductions of more than ",
                MTIA_TORCH_MAX_DIMS, " dims are not supported (", ndim, " dims)");
    mtiaTorchReduce p{};
    p.op = op;
    p.takeSqrt = takeSqrt ? 1 : 0;
    p.scalar = scalar;
    p.in = reinterpret_cast<uint64_t>(self.data_ptr());
    p.inDtype = kernelDtype(self.scalar_type());
    if (out.defined()) {
        p.out = reinterpret_cast<uint64_t>(out.data_ptr());
        p.outDtype = kernelDtype(out.scalar_type());
    }
    if (aux.defined()) {
        p.aux = reinterpret_cast<uint64_t>(aux.data_ptr());
        p.auxDtype = kernelDtype(aux.scalar_type());
    }
    p.keptNumel = 1;
    p.redNumel = 1;
    int64_t outDim = 0;
    for (int64_t d = 0; d < ndim; ++d) {
        if (mask[d]) {
            p.redSizes[p.redDims] = self.size(d);
            p.inRedStrides[p.redDims++] = self.stride(d);
            p.redNumel *= static_cast<uint64_t>(self.size(d));
            if (keepdim) ++outDim;
        } else {
            p.keptSizes[p.keptDims] = self.size(d);
            p.inKeptStrides[p.keptDims] = self.stride(d);
            if (out.defined()) p.outStrides[p.keptDims] = out.stride(outDim);
            if (aux.defined()) p.auxStrides[p.keptDims] = aux.stride(outDim);
            ++p.keptDims;
            ++outDim;
            p.keptNumel *= static_cast<uint64_t>(self.size(d));
        }
    }
    if (p.keptNumel == 0) return;
    static ModuleKernel kernel("mtia_torch_reduce");
    // One large floating sum (x.sum(), x.mean()): blocks sum shares of it into float64 partials,
    // and a second launch adds those, instead of one block doing all the work.
    constexpr uint32_t kShares = 16;
    if ((op == mtiaTorchReduceSum || op == mtiaTorchReduceMean) && p.keptNumel == 1 &&
        p.redNumel >= (uint64_t{1} << 16) && at::isFloatingType(self.scalar_type()) &&
        out.defined() && at::isFloatingType(out.scalar_type())) {
        at::Tensor partials = emptyDevice({kShares}, at::kDouble, self.device());
        mtiaTorchReduce shares = p;
        shares.partial = 1;
        shares.out = 0;
        shares.aux = reinterpret_cast<uint64_t>(partials.data_ptr());
        shares.auxDtype = mtiaTorchFloat64;
        kernel.launch(shares, mtiaDim3{kShares, 1, 1});
        mtiaTorchReduce total{};
        total.op = op;
        total.keptNumel = 1;
        total.redDims = 1;
        total.redSizes[0] = kShares;
        total.inRedStrides[0] = 1;
        total.redNumel = kShares;
        total.meanCount = p.redNumel;
        total.in = shares.aux;
        total.inDtype = mtiaTorchFloat64;
        total.out = p.out;
        total.outDtype = p.outDtype;
        kernel.launch(total, mtiaDim3{1, 1, 1});
        return;
    }
    kernel.launch(p, gridFor(p.keptNumel * std::max<uint64_t>(p.redNumel, 1)));
}

at::Tensor newOut(const at::Tensor& self, const DimMask& mask, bool keepdim, at::ScalarType t) {
    return emptyDevice(reducedSizes(self, mask, keepdim), t, self.device());
}

// out= forms: resized to the result's shape as the CPU's (with its warning for a non-empty out).
void resizeOut(const at::Tensor& out, const at::Tensor& self, const DimMask& mask, bool keepdim,
               const char* name) {
    TORCH_CHECK(out.device() == self.device(), name, ": expected out on ", self.device(), ", got ",
                out.device());
    at::native::resize_output(out, reducedSizes(self, mask, keepdim));
}

void checkSupported(const at::Tensor& self, const char* name) {
    TORCH_CHECK(kernelSupports(self.scalar_type()), "torch_mtia: ", name, " of dtype ",
                self.scalar_type(), " is not supported on the device");
}

bool isIntegral(at::ScalarType t) {
    return at::isIntegralType(t, /*includeBool=*/true);
}

// --- sum, mean, prod ----------------------------------------------------------------------------

at::ScalarType sumType(const at::Tensor& self, std::optional<at::ScalarType> dtype) {
    if (dtype) return *dtype;
    return isIntegral(self.scalar_type()) ? at::kLong : self.scalar_type();
}

at::Tensor& sumInto(const at::Tensor& self, const DimMask& mask, bool keepdim, at::Tensor& out,
                    int32_t op = mtiaTorchReduceSum) {
    checkSupported(self, "sum");
    launchReduce(op, self, mask, keepdim, out, at::Tensor());
    return out;
}

at::Tensor sumDims(const at::Tensor& self, at::OptionalIntArrayRef dims, bool keepdim,
                   std::optional<at::ScalarType> dtype) {
    const c10::DeviceGuard guard(self.device());
    const DimMask mask = maskOf(self, dims);
    at::Tensor out = newOut(self, mask, keepdim, sumType(self, dtype));
    return sumInto(self, mask, keepdim, out);
}

at::Tensor sumAll(const at::Tensor& self, std::optional<at::ScalarType> dtype) {
    return sumDims(self, c10::nullopt, false, dtype);
}

at::Tensor& sumOut(const at::Tensor& self, at::OptionalIntArrayRef dims, bool keepdim,
                   std::optional<at::ScalarType> dtype, at::Tensor& out) {
    const c10::DeviceGuard guard(self.device());
    // As the CPU: the out tensor's dtype is the result's unless dtype= names one, which must match.
    TORCH_CHECK(!dtype || *dtype == out.scalar_type(), "Expected out tensor to have dtype ", *dtype,
                ", but got ", out.scalar_type(), " instead");
    const DimMask mask = maskOf(self, dims);
    resizeOut(out, self, mask, keepdim, "sum");
    return sumInto(self, mask, keepdim, out);
}

at::ScalarType meanType(const at::Tensor& self, std::optional<at::ScalarType> dtype,
                        const char* name) {
    const at::ScalarType t = dtype ? *dtype : self.scalar_type();
    TORCH_CHECK(at::isFloatingType(t) || at::isComplexType(t), name,
                "(): could not infer output dtype. ", dtype ? "Optional" : "Input",
                " dtype must be either a floating point or complex dtype. ", "Got: ", t);
    return t;
}

at::Tensor meanDims(const at::Tensor& self, at::OptionalIntArrayRef dims, bool keepdim,
                    std::optional<at::ScalarType> dtype) {
    const c10::DeviceGuard guard(self.device());
    const at::ScalarType t = meanType(self, dtype, "mean");
    const DimMask mask = maskOf(self, dims);
    at::Tensor out = newOut(self, mask, keepdim, t);
    return sumInto(self, mask, keepdim, out, mtiaTorchReduceMean);
}

at::Tensor meanAll(const at::Tensor& self, std::optional<at::ScalarType> dtype) {
    return meanDims(self, c10::nullopt, false, dtype);
}

at::Tensor& meanOut(const at::Tensor& self, at::OptionalIntArrayRef dims, bool keepdim,
                    std::optional<at::ScalarType> dtype, at::Tensor& out) {
    const c10::DeviceGuard guard(self.device());
    meanType(self, dtype ? dtype : std::optional<at::ScalarType>(out.scalar_type()), "mean");
    TORCH_CHECK(!dtype || *dtype == out.scalar_type(), "Expected out tensor to have dtype ", *dtype,
                ", but got ", out.scalar_type(), " instead");
    const DimMask mask = maskOf(self, dims);
    resizeOut(out, self, mask, keepdim, "mean");
    return sumInto(self, mask, keepdim, out, mtiaTorchReduceMean);
}

at::Tensor prodDim(const at::Tensor& self, int64_t dim, bool keepdim,
                   std::optional<at::ScalarType> dtype) {
    const c10::DeviceGuard guard(self.device());
    const DimMask mask = maskOfDim(self, dim);
    at::Tensor out = newOut(self, mask, keepdim, sumType(self, dtype));
    return sumInto(self, mask, keepdim, out, mtiaTorchReduceProd);
}

at::Tensor prodAll(const at::Tensor& self, std::optional<at::ScalarType> dtype) {
    const c10::DeviceGuard guard(self.device());
    const DimMask mask = DimMask().set();
    at::Tensor out = newOut(self, mask, false, sumType(self, dtype));
    return sumInto(self, mask, false, out, mtiaTorchReduceProd);
}

at::Tensor& prodOut(const at::Tensor& self, int64_t dim, bool keepdim,
                    std::optional<at::ScalarType> dtype, at::Tensor& out) {
    const c10::DeviceGuard guard(self.device());
    TORCH_CHECK(!dtype || *dtype == out.scalar_type(), "Expected out tensor to have dtype ", *dtype,
                ", but got ", out.scalar_type(), " instead");
    const DimMask mask = maskOfDim(self, dim);
    resizeOut(out, self, mask, keepdim, "prod");
    return sumInto(self, mask, keepdim, out, mtiaTorchReduceProd);
}

// --- max, min, amax, amin, argmax, argmin --------------------------------------------------------

void checkNonEmpty(const at::Tensor& self, const DimMask& mask, const char* name) {
    if (self.numel() != 0) return;
    for (int64_t d = 0; d < self.dim(); ++d) {
        TORCH_CHECK_INDEX(!mask[d] || self.size(d) != 0, name, "(): Expected reduction dim ", d,
                          " to have non-zero size.");
    }
    TORCH_CHECK_INDEX(self.dim() != 0, name, "(): Expected reduction dim to be specified for ",
                      "input.numel() == 0.");
}

at::Tensor extremumAll(const at::Tensor& self, bool wantMax) {
    const c10::DeviceGuard guard(self.device());
    checkSupported(self, wantMax ? "max" : "min");
    TORCH_CHECK(self.numel() > 0, wantMax ? "max" : "min",
                "(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                "reduction dim with the 'dim' argument.");
    at::Tensor out = emptyDevice({}, self.scalar_type(), self.device());
    launchReduce(wantMax ? mtiaTorchReduceMax : mtiaTorchReduceMin, self, DimMask().set(), false,
                 out, at::Tensor());
    return out;
}
at::Tensor maxAll(const at::Tensor& self) {
    return extremumAll(self, true);
}
at::Tensor minAll(const at::Tensor& self) {
    return extremumAll(self, false);
}

void extremumDimInto(const at::Tensor& self, int64_t dim, bool keepdim, const at::Tensor& values,
                     const at::Tensor& indices, bool wantMax) {
    const char* name = wantMax ? "max" : "min";
    checkSupported(self, name);
    const DimMask mask = maskOfDim(self, dim);
    checkNonEmpty(self, mask, name);
    launchReduce(wantMax ? mtiaTorchReduceMax : mtiaTorchReduceMin, self, mask, keepdim, values,
                 indices);
}

std::tuple<at::Tensor, at::Tensor> extremumDim(const at::Tensor& self, int64_t dim, bool keepdim,
                                               bool wantMax) {
    const c10::DeviceGuard guard(self.device());
    const DimMask mask = maskOfDim(self, dim);
    at::Tensor values = newOut(self, mask, keepdim, self.scalar_type());
    at::Tensor indices = newOut(self, mask, keepdim, at::kLong);
    extremumDimInto(self, dim, keepdim, values, indices, wantMax);
    return {values, indices};
}
std::tuple<at::Tensor, at::Tensor> maxDim(const at::Tensor& self, int64_t dim, bool keepdim) {
    return extremumDim(self, dim, keepdim, true);
}
std::tuple<at::Tensor, at::Tensor> minDim(const at::Tensor& self, int64_t dim, bool keepdim) {
    return extremumDim(self, dim, keepdim, false);
}

std::tuple<at::Tensor&, at::Tensor&> extremumDimOut(const at::Tensor& self, int64_t dim,
                                                    bool keepdim, at::Tensor& values,
                                                    at::Tensor& indices, bool wantMax) {
    const c10::DeviceGuard guard(self.device());
    TORCH_CHECK(values.scalar_type() == self.scalar_type(), "Expected out tensor to have dtype ",
                self.scalar_type(), ", but got ", values.scalar_type(), " instead");
    TORCH_CHECK(indices.scalar_type() == at::kLong, "Expected out tensor to have dtype long int, ",
                "but got ", indices.scalar_type(), " instead");
    const DimMask mask = maskOfDim(self, dim);
    resizeOut(values, self, mask, keepdim, wantMax ? "max" : "min");
    resizeOut(indices, self, mask, keepdim, wantMax ? "max" : "min");
    extremumDimInto(self, dim, keepdim, values, indices, wantMax);
    return {values, indices};
}
std::tuple<at::Tensor&, at::Tensor&> maxDimOut(const at::Tensor& self, int64_t dim, bool keepdim,
                                               at::Tensor& values, at::Tensor& indices) {
    return extremumDimOut(self, dim, keepdim, values, indices, true);
}
std::tuple<at::Tensor&, at::Tensor&> minDimOut(const at::Tensor& self, int64_t dim, bool keepdim,
                                               at::Tensor& values, at::Tensor& indices) {
    return extremumDimOut(self, dim, keepdim, values, indices, false);
}

at::Tensor& amaxInto(const at::Tensor& self, at::IntArrayRef dims, bool keepdim, at::Tensor& out,
                     bool wantMax) {
    const char* name = wantMax ? "amax" : "amin";
    checkSupported(self, name);
    const DimMask mask = maskOf(self, dims);
    checkNonEmpty(self, mask, name);
    launchReduce(wantMax ? mtiaTorchReduceMax : mtiaTorchReduceMin, self, mask, keepdim, out,
                 at::Tensor());
    return out;
}
at::Tensor amax(const at::Tensor& self, at::IntArrayRef dims, bool keepdim) {
    const c10::DeviceGuard guard(self.device());
    at::Tensor out = newOut(self, maskOf(self, dims), keepdim, self.scalar_type());
    return amaxInto(self, dims, keepdim, out, true);
}
at::Tensor amin(const at::Tensor& self, at::IntArrayRef dims, bool keepdim) {
    const c10::DeviceGuard guard(self.device());
    at::Tensor out = newOut(self, maskOf(self, dims), keepdim, self.scalar_type());
    return amaxInto(self, dims, keepdim, out, false);
}
at::Tensor& amaxOutImpl(const at::Tensor& self, at::IntArrayRef dims, bool keepdim, at::Tensor& out,
                        bool wantMax) {
    const c10::DeviceGuard guard(self.device());
    TORCH_CHECK(self.scalar_type() == out.scalar_type(), "Expected the dtype for input and out to ",
                "match, but got ", self.scalar_type(), " for input's dtype and ", out.scalar_type(),
                " for out's dtype.");
    resizeOut(out, self, maskOf(self, dims), keepdim, wantMax ? "amax" : "amin");
    return amaxInto(self, dims, keepdim, out, wantMax);
}
at::Tensor& amaxOut(const at::Tensor& self, at::IntArrayRef dims, bool keepdim, at::Tensor& out) {
    return amaxOutImpl(self, dims, keepdim, out, true);
}
at::Tensor& aminOut(const at::Tensor& self, at::IntArrayRef dims, bool keepdim, at::Tensor& out) {
    return amaxOutImpl(self, dims, keepdim, out, false);
}

// argmax/argmin with dim=None reduce the flattened input: its row-major index is the reduced
// index space's.
at::Tensor& argInto(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim,
                    at::Tensor& out, bool wantMax) {
    const char* name = wantMax ? "argmax" : "argmin";
    checkSupported(self, name);
    if (!dim) {
        TORCH_CHECK(self.numel() != 0, name, "(): Expected reduction dim to be specified for ",
                    "input.numel() == 0.");
    }
    const DimMask mask = dim ? maskOfDim(self, *dim) : DimMask().set();
    if (dim) checkNonEmpty(self, mask, name);
    // keepdim with dim=None keeps every dim at size 1, as the CPU.
    launchReduce(wantMax ? mtiaTorchReduceMax : mtiaTorchReduceMin, self, mask, keepdim,
                 at::Tensor(), out);
    return out;
}
at::Tensor argImpl(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim, bool wantMax) {
    const c10::DeviceGuard guard(self.device());
    const DimMask mask = dim ? maskOfDim(self, *dim) : DimMask().set();
    at::Tensor out = newOut(self, mask, keepdim, at::kLong);
    return argInto(self, dim, keepdim, out, wantMax);
}
at::Tensor argmax(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim) {
    return argImpl(self, dim, keepdim, true);
}
at::Tensor argmin(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim) {
    return argImpl(self, dim, keepdim, false);
}
at::Tensor& argOutImpl(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim,
                       at::Tensor& out, bool wantMax) {
    const c10::DeviceGuard guard(self.device());
    TORCH_CHECK(out.scalar_type() == at::kLong,
                "Expected out tensor to have dtype long int, but got ", out.scalar_type(),
                " instead");
    const DimMask mask = dim ? maskOfDim(self, *dim) : DimMask().set();
    resizeOut(out, self, mask, keepdim, wantMax ? "argmax" : "argmin");
    return argInto(self, dim, keepdim, out, wantMax);
}
at::Tensor& argmaxOut(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim,
                      at::Tensor& out) {
    return argOutImpl(self, dim, keepdim, out, true);
}
at::Tensor& argminOut(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim,
                      at::Tensor& out) {
    return argOutImpl(self, dim, keepdim, out, false);
}

// --- var, std
// -------------------------------------------------------------------------------------

void checkVar(const at::Tensor& self, const char* name) {
    TORCH_CHECK(at::isFloatingType(self.scalar_type()), name,
                " only supports floating-point dtypes");
    checkSupported(self, name);
}

double correctionOf(const std::optional<c10::Scalar>& correction) {
    return correction ? correction->toDouble() : 1.0;
}

// The CPU's warning when the correction leaves no degrees of freedom.
void warnDof(const at::Tensor& self, const DimMask& mask, double correction, const char* name) {
    int64_t n = 1;
    for (int64_t d = 0; d < self.dim(); ++d)
        if (mask[d]) n *= self.size(d);
    if (static_cast<double>(n) - correction <= 0) {
        TORCH_WARN(name, "(): degrees of freedom is <= 0. Correction should be strictly less ",
                   "than the reduction factor (input numel divided by output numel).");
    }
}

at::Tensor varStd(const at::Tensor& self, at::OptionalIntArrayRef dims,
                  const std::optional<c10::Scalar>& correction, bool keepdim, bool takeSqrt) {
    const c10::DeviceGuard guard(self.device());
    checkVar(self, takeSqrt ? "std" : "var");
    const DimMask mask = maskOf(self, dims);
    warnDof(self, mask, correctionOf(correction), takeSqrt ? "std" : "var");
    at::Tensor out = newOut(self, mask, keepdim, self.scalar_type());
    launchReduce(mtiaTorchReduceVar, self, mask, keepdim, out, at::Tensor(),
                 correctionOf(correction), takeSqrt);
    return out;
}
at::Tensor var(const at::Tensor& self, at::OptionalIntArrayRef dims,
               const std::optional<c10::Scalar>& correction, bool keepdim) {
    return varStd(self, dims, correction, keepdim, false);
}
at::Tensor stdev(const at::Tensor& self, at::OptionalIntArrayRef dims,
                 const std::optional<c10::Scalar>& correction, bool keepdim) {
    return varStd(self, dims, correction, keepdim, true);
}
at::Tensor& varStdOut(const at::Tensor& self, at::OptionalIntArrayRef dims,
                      const std::optional<c10::Scalar>& correction, bool keepdim, at::Tensor& out,
                      bool takeSqrt) {
    const c10::DeviceGuard guard(self.device());
    checkVar(self, takeSqrt ? "std" : "var");
    TORCH_CHECK(out.scalar_type() == self.scalar_type(), "Expected out tensor to have dtype ",
                self.scalar_type(), ", but got ", out.scalar_type(), " instead");
    const DimMask mask = maskOf(self, dims);
    warnDof(self, mask, correctionOf(correction), takeSqrt ? "std" : "var");
    resizeOut(out, self, mask, keepdim, takeSqrt ? "std" : "var");
    launchReduce(mtiaTorchReduceVar, self, mask, keepdim, out, at::Tensor(),
                 correctionOf(correction), takeSqrt);
    return out;
}
at::Tensor& varOut(const at::Tensor& self, at::OptionalIntArrayRef dims,
                   const std::optional<c10::Scalar>& correction, bool keepdim, at::Tensor& out) {
    return varStdOut(self, dims, correction, keepdim, out, false);
}
at::Tensor& stdOut(const at::Tensor& self, at::OptionalIntArrayRef dims,
                   const std::optional<c10::Scalar>& correction, bool keepdim, at::Tensor& out) {
    return varStdOut(self, dims, correction, keepdim, out, true);
}
std::tuple<at::Tensor, at::Tensor> varStdMean(const at::Tensor& self, at::OptionalIntArrayRef dims,
                                              const std::optional<c10::Scalar>& correction,
                                              bool keepdim, bool takeSqrt) {
    const c10::DeviceGuard guard(self.device());
    checkVar(self, takeSqrt ? "std_mean" : "var_mean");
    const DimMask mask = maskOf(self, dims);
    warnDof(self, mask, correctionOf(correction), takeSqrt ? "std_mean" : "var_mean");
    at::Tensor out = newOut(self, mask, keepdim, self.scalar_type());
    at::Tensor mean = newOut(self, mask, keepdim, self.scalar_type());
    launchReduce(mtiaTorchReduceVar, self, mask, keepdim, out, mean, correctionOf(correction),
                 takeSqrt);
    return {out, mean};
}
std::tuple<at::Tensor, at::Tensor> varMean(const at::Tensor& self, at::OptionalIntArrayRef dims,
                                           const std::optional<c10::Scalar>& correction,
                                           bool keepdim) {
    return varStdMean(self, dims, correction, keepdim, false);
}
std::tuple<at::Tensor, at::Tensor> stdMean(const at::Tensor& self, at::OptionalIntArrayRef dims,
                                           const std::optional<c10::Scalar>& correction,
                                           bool keepdim) {
    return varStdMean(self, dims, correction, keepdim, true);
}

// --- norms
// ----------------------------------------------------------------------------------------

at::Tensor& vectorNormInto(const at::Tensor& self, const c10::Scalar& ord,
                           at::OptionalIntArrayRef dims, bool keepdim, at::Tensor& out) {
    TORCH_CHECK(at::isFloatingType(self.scalar_type()),
                "linalg.vector_norm: Expected a floating point or complex tensor as input. Got ",
                self.scalar_type());
    checkSupported(self, "linalg.vector_norm");
    const double p = ord.toDouble();
    const DimMask mask = maskOf(self, dims);
    if (self.numel() == 0 && (p < 0 || std::isinf(p))) {
        // As the CPU: a norm that is a minimum or a maximum needs elements to reduce.
        TORCH_CHECK(dims && !dims->empty(), "linalg.vector_norm cannot compute the ", ord,
                    " norm on an empty tensor because the operation does not have an identity");
        for (int64_t d = 0; d < self.dim(); ++d) {
            TORCH_CHECK(!mask[d] || self.size(d) != 0, "linalg.vector_norm cannot compute the ",
                        ord, " norm on the dimension ", d, "because this dimension is empty and ",
                        "the operation does not have an identity");
        }
    }
    launchReduce(mtiaTorchReduceNorm, self, mask, keepdim, out, at::Tensor(), p);
    return out;
}
at::Tensor vectorNorm(const at::Tensor& self, const c10::Scalar& ord, at::OptionalIntArrayRef dims,
                      bool keepdim, std::optional<at::ScalarType> dtype) {
    const c10::DeviceGuard guard(self.device());
    if (dtype) {
        TORCH_CHECK(at::isFloatingType(*dtype), "linalg.vector_norm: dtype should be floating ",
                    "point or complex. Got ", *dtype);
    }
    at::Tensor out = newOut(self, maskOf(self, dims), keepdim, dtype ? *dtype : self.scalar_type());
    return vectorNormInto(self, ord, dims, keepdim, out);
}
at::Tensor& vectorNormOut(const at::Tensor& self, const c10::Scalar& ord,
                          at::OptionalIntArrayRef dims, bool keepdim,
                          std::optional<at::ScalarType> dtype, at::Tensor& out) {
    const c10::DeviceGuard guard(self.device());
    TORCH_CHECK(out.scalar_type() == (dtype ? *dtype : self.scalar_type()),
                "linalg.vector_norm expected out tensor dtype ",
                dtype ? *dtype : self.scalar_type(), " but got: ", out.scalar_type());
    resizeOut(out, self, maskOf(self, dims), keepdim, "linalg.vector_norm");
    return vectorNormInto(self, ord, dims, keepdim, out);
}

// aten::norm's overloads: the same kernel (p = None is 2).
at::Tensor normDtype(const at::Tensor& self, const std::optional<c10::Scalar>& p,
                     at::IntArrayRef dims, bool keepdim, at::ScalarType dtype) {
    return vectorNorm(self, p ? *p : c10::Scalar(2.0), dims, keepdim, dtype);
}
at::Tensor normDim(const at::Tensor& self, const std::optional<c10::Scalar>& p,
                   at::IntArrayRef dims, bool keepdim) {
    return vectorNorm(self, p ? *p : c10::Scalar(2.0), dims, keepdim, c10::nullopt);
}
at::Tensor normScalar(const at::Tensor& self, const c10::Scalar& p) {
    return vectorNorm(self, p, c10::nullopt, false, c10::nullopt);
}
at::Tensor normScalarOpt(const at::Tensor& self, const std::optional<c10::Scalar>& p,
                         at::ScalarType dtype) {
    return vectorNorm(self, p ? *p : c10::Scalar(2.0), c10::nullopt, false, dtype);
}
at::Tensor& normOut(const at::Tensor& self, const std::optional<c10::Scalar>& p,
                    at::IntArrayRef dims, bool keepdim, at::Tensor& out) {
    return vectorNormOut(self, p ? *p : c10::Scalar(2.0), dims, keepdim, c10::nullopt, out);
}

// --- all, any
// -------------------------------------------------------------------------------------

at::ScalarType logicalType(const at::Tensor& self) {
    return self.scalar_type() == at::kByte ? at::kByte : at::kBool;
}

at::Tensor logical(const at::Tensor& self, at::OptionalIntArrayRef dims, bool keepdim, bool all) {
    const c10::DeviceGuard guard(self.device());
    checkSupported(self, all ? "all" : "any");
    const DimMask mask = maskOf(self, dims);
    at::Tensor out = newOut(self, mask, keepdim, logicalType(self));
    launchReduce(all ? mtiaTorchReduceAll : mtiaTorchReduceAny, self, mask, keepdim, out,
                 at::Tensor());
    return out;
}
at::Tensor& logicalOut(const at::Tensor& self, at::OptionalIntArrayRef dims, bool keepdim,
                       at::Tensor& out, bool all) {
    const c10::DeviceGuard guard(self.device());
    checkSupported(self, all ? "all" : "any");
    TORCH_CHECK(out.scalar_type() == at::kBool || out.scalar_type() == at::kByte,
                all ? "all" : "any",
                " only supports bool tensor for result, got: ", out.scalar_type());
    const DimMask mask = maskOf(self, dims);
    resizeOut(out, self, mask, keepdim, all ? "all" : "any");
    launchReduce(all ? mtiaTorchReduceAll : mtiaTorchReduceAny, self, mask, keepdim, out,
                 at::Tensor());
    return out;
}
at::Tensor allFull(const at::Tensor& self) {
    return logical(self, c10::nullopt, false, true);
}
at::Tensor anyFull(const at::Tensor& self) {
    return logical(self, c10::nullopt, false, false);
}
at::Tensor allDim(const at::Tensor& self, int64_t dim, bool keepdim) {
    return logical(self, at::IntArrayRef{dim}, keepdim, true);
}
at::Tensor anyDim(const at::Tensor& self, int64_t dim, bool keepdim) {
    return logical(self, at::IntArrayRef{dim}, keepdim, false);
}
at::Tensor allDims(const at::Tensor& self, at::OptionalIntArrayRef dims, bool keepdim) {
    return logical(self, dims, keepdim, true);
}
at::Tensor anyDims(const at::Tensor& self, at::OptionalIntArrayRef dims, bool keepdim) {
    return logical(self, dims, keepdim, false);
}
at::Tensor& allFullOut(const at::Tensor& self, at::Tensor& out) {
    return logicalOut(self, c10::nullopt, false, out, true);
}
at::Tensor& anyFullOut(const at::Tensor& self, at::Tensor& out) {
    return logicalOut(self, c10::nullopt, false, out, false);
}
at::Tensor& allDimOut(const at::Tensor& self, int64_t dim, bool keepdim, at::Tensor& out) {
    return logicalOut(self, at::IntArrayRef{dim}, keepdim, out, true);
}
at::Tensor& anyDimOut(const at::Tensor& self, int64_t dim, bool keepdim, at::Tensor& out) {
    return logicalOut(self, at::IntArrayRef{dim}, keepdim, out, false);
}
at::Tensor& allDimsOut(const at::Tensor& self, at::OptionalIntArrayRef dims, bool keepdim,
                       at::Tensor& out) {
    return logicalOut(self, dims, keepdim, out, true);
}
at::Tensor& anyDimsOut(const at::Tensor& self, at::OptionalIntArrayRef dims, bool keepdim,
                       at::Tensor& out) {
    return logicalOut(self, dims, keepdim, out, false);
}

// --- logsumexp
// ------------------------------------------------------------------------------------

at::Tensor& logsumexpInto(const at::Tensor& self, at::IntArrayRef dims, bool keepdim,
                          at::Tensor& out) {
    checkSupported(self, "logsumexp");
    const DimMask mask = maskOf(self, dims);
    launchReduce(mtiaTorchReduceLogSumExp, self, mask, keepdim, out, at::Tensor());
    return out;
}
at::Tensor logsumexp(const at::Tensor& self, at::IntArrayRef dims, bool keepdim) {
    const c10::DeviceGuard guard(self.device());
    // Integers give the default floating dtype, as the CPU.
    const at::ScalarType t = isIntegral(self.scalar_type())
                                 ? c10::typeMetaToScalarType(at::get_default_dtype())
                                 : self.scalar_type();
    at::Tensor out = newOut(self, maskOf(self, dims), keepdim, t);
    return logsumexpInto(self, dims, keepdim, out);
}
at::Tensor& logsumexpOut(const at::Tensor& self, at::IntArrayRef dims, bool keepdim,
                         at::Tensor& out) {
    const c10::DeviceGuard guard(self.device());
    TORCH_CHECK(at::isFloatingType(out.scalar_type()), "logsumexp(): Expected floating point ",
                "type for result tensor, but got: ", out.scalar_type());
    resizeOut(out, self, maskOf(self, dims), keepdim, "logsumexp");
    return logsumexpInto(self, dims, keepdim, out);
}

// --- cumsum, cumprod
// ------------------------------------------------------------------------------

// The scan: the reduced space is the one dim; out is addressed over the kept dims and along it.
void launchScan(int32_t op, const at::Tensor& self, int64_t dim, const at::Tensor& out) {
    checkSupported(self, op == mtiaTorchReduceCumSum ? "cumsum" : "cumprod");
    if (self.numel() == 0) return;
    if (self.dim() == 0) {
        launchReduce(op, self, DimMask(), false, out, at::Tensor());
        return;
    }
    const int64_t d = at::maybe_wrap_dim(dim, self.dim());
    // Reuse launchReduce's geometry with keepdim (out's dims line up with self's), then add the
    // scanned stride: build the params by hand for that one field.
    mtiaTorchReduce p{};
    p.op = op;
    p.in = reinterpret_cast<uint64_t>(self.data_ptr());
    p.inDtype = kernelDtype(self.scalar_type());
    p.out = reinterpret_cast<uint64_t>(out.data_ptr());
    p.outDtype = kernelDtype(out.scalar_type());
    TORCH_CHECK(self.dim() <= MTIA_TORCH_MAX_DIMS, "torch_mtia: scans of more than ",
                MTIA_TORCH_MAX_DIMS, " dims are not supported");
    p.keptNumel = 1;
    for (int64_t i = 0; i < self.dim(); ++i) {
        if (i == d) continue;
        p.keptSizes[p.keptDims] = self.size(i);
        p.inKeptStrides[p.keptDims] = self.stride(i);
        p.outStrides[p.keptDims++] = out.stride(i);
        p.keptNumel *= static_cast<uint64_t>(self.size(i));
    }
    p.redDims = 1;
    p.redSizes[0] = self.size(d);
    p.inRedStrides[0] = self.stride(d);
    p.redNumel = static_cast<uint64_t>(self.size(d));
    p.outScanStride = out.stride(d);
    static ModuleKernel kernel("mtia_torch_reduce");
    kernel.launch(p, gridFor(static_cast<uint64_t>(self.numel())));
}

at::Tensor scan(const at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype,
                int32_t op) {
    const c10::DeviceGuard guard(self.device());
    at::Tensor out = emptyDevice(self.sizes(), sumType(self, dtype), self.device());
    launchScan(op, self, dim, out);
    return out;
}
at::Tensor cumsum(const at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype) {
    return scan(self, dim, dtype, mtiaTorchReduceCumSum);
}
at::Tensor cumprod(const at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype) {
    return scan(self, dim, dtype, mtiaTorchReduceCumProd);
}
at::Tensor& scanOut(const at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype,
                    at::Tensor& out, int32_t op) {
    const c10::DeviceGuard guard(self.device());
    TORCH_CHECK(!dtype || *dtype == out.scalar_type(), "Expected out tensor to have dtype ", *dtype,
                ", but got ", out.scalar_type(), " instead");
    at::native::resize_output(out, self.sizes());
    if (out.is_same(self) || !out.is_non_overlapping_and_dense()) {
        // In place (cumsum_) or an overlapping out: scan into a fresh tensor and copy.
        at::Tensor tmp = emptyDevice(self.sizes(), out.scalar_type(), self.device());
        launchScan(op, self, dim, tmp);
        copyOnDevice(out, tmp);
        return out;
    }
    launchScan(op, self, dim, out);
    return out;
}
at::Tensor& cumsumOut(const at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype,
                      at::Tensor& out) {
    return scanOut(self, dim, dtype, out, mtiaTorchReduceCumSum);
}
at::Tensor& cumprodOut(const at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype,
                       at::Tensor& out) {
    return scanOut(self, dim, dtype, out, mtiaTorchReduceCumProd);
}
at::Tensor& cumsumInPlace(at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype) {
    return scanOut(self, dim, dtype, self, mtiaTorchReduceCumSum);
}
at::Tensor& cumprodInPlace(at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype) {
    return scanOut(self, dim, dtype, self, mtiaTorchReduceCumProd);
}

// --- softmax
// --------------------------------------------------------------------------------------

void launchSoftmax(int32_t op, const at::Tensor& in, const at::Tensor& grad, const at::Tensor& out,
                   int64_t dim) {
    if (out.numel() == 0) return;
    mtiaTorchSoftmaxParams p{};
    p.op = op;
    p.in = reinterpret_cast<uint64_t>(in.data_ptr());
    p.inDtype = kernelDtype(in.scalar_type());
    p.out = reinterpret_cast<uint64_t>(out.data_ptr());
    p.outDtype = kernelDtype(out.scalar_type());
    if (grad.defined()) {
        p.grad = reinterpret_cast<uint64_t>(grad.data_ptr());
        p.gradDtype = kernelDtype(grad.scalar_type());
    }
    p.outer = 1;
    p.inner = 1;
    p.dim = in.dim() == 0 ? 1 : in.size(dim);
    for (int64_t d = 0; d < in.dim(); ++d) {
        if (d < dim) p.outer *= in.size(d);
        if (d > dim) p.inner *= in.size(d);
    }
    static ModuleKernel kernel("mtia_torch_softmax");
    kernel.launch(p, gridFor(static_cast<uint64_t>(in.numel())));
}

at::Tensor softmaxForward(const at::Tensor& self, int64_t dim, bool halfToFloat, bool log) {
    const c10::DeviceGuard guard(self.device());
    const char* name = log ? "log_softmax" : "softmax";
    TORCH_CHECK(at::isFloatingType(self.scalar_type()), name, "_lastdim_kernel_impl",
                " not implemented for '", self.scalar_type(), "'");
    checkSupported(self, name);
    if (halfToFloat) {
        TORCH_CHECK(self.scalar_type() == at::kHalf, "conversion is supported for Half type only");
    }
    const int64_t d = at::maybe_wrap_dim(dim, self.dim());
    const at::Tensor in = contiguousOnDevice(self, self.scalar_type());
    at::Tensor out =
        emptyDevice(self.sizes(), halfToFloat ? at::kFloat : self.scalar_type(), self.device());
    launchSoftmax(log ? mtiaTorchLogSoftmax : mtiaTorchSoftmax, in, at::Tensor(), out, d);
    return out;
}
at::Tensor softmax(const at::Tensor& self, int64_t dim, bool halfToFloat) {
    return softmaxForward(self, dim, halfToFloat, false);
}
at::Tensor logSoftmax(const at::Tensor& self, int64_t dim, bool halfToFloat) {
    return softmaxForward(self, dim, halfToFloat, true);
}
at::Tensor& softmaxOutImpl(const at::Tensor& self, int64_t dim, bool halfToFloat, at::Tensor& out,
                           bool log) {
    at::Tensor r = softmaxForward(self, dim, halfToFloat, log);
    const c10::DeviceGuard guard(self.device());
    at::native::resize_output(out, r.sizes());
    copyOnDevice(out, r);
    return out;
}
at::Tensor& softmaxOut(const at::Tensor& self, int64_t dim, bool halfToFloat, at::Tensor& out) {
    return softmaxOutImpl(self, dim, halfToFloat, out, false);
}
at::Tensor& logSoftmaxOut(const at::Tensor& self, int64_t dim, bool halfToFloat, at::Tensor& out) {
    return softmaxOutImpl(self, dim, halfToFloat, out, true);
}

at::Tensor softmaxBackward(const at::Tensor& gradOutput, const at::Tensor& output, int64_t dim,
                           at::ScalarType inputDtype, bool log) {
    const c10::DeviceGuard guard(output.device());
    TORCH_CHECK(gradOutput.sizes() == output.sizes(), "grad_output and output must have the same ",
                "sizes: ", gradOutput.sizes(), " and ", output.sizes());
    TORCH_CHECK(gradOutput.device() == output.device(), "expected grad_output on ",
                output.device());
    const int64_t d = at::maybe_wrap_dim(dim, output.dim());
    const at::Tensor y = contiguousOnDevice(output, output.scalar_type());
    const at::Tensor g = contiguousOnDevice(gradOutput, gradOutput.scalar_type());
    // half_to_float's backward gets float gradients and gives the input's half.
    at::Tensor out = emptyDevice(output.sizes(), inputDtype, output.device());
    launchSoftmax(log ? mtiaTorchLogSoftmaxBackward : mtiaTorchSoftmaxBackward, y, g, out, d);
    return out;
}
at::Tensor softmaxBackwardData(const at::Tensor& gradOutput, const at::Tensor& output, int64_t dim,
                               at::ScalarType inputDtype) {
    return softmaxBackward(gradOutput, output, dim, inputDtype, false);
}
at::Tensor logSoftmaxBackwardData(const at::Tensor& gradOutput, const at::Tensor& output,
                                  int64_t dim, at::ScalarType inputDtype) {
    return softmaxBackward(gradOutput, output, dim, inputDtype, true);
}

}  // namespace
}  // namespace torch_mtia::reduce_ops

namespace torch_mtia::reduce_ops {
TORCH_LIBRARY_IMPL(aten, MTIA, m) {
    m.impl("sum", TORCH_FN(sumAll));
    m.impl("sum.dim_IntList", TORCH_FN(sumDims));
    m.impl("sum.IntList_out", TORCH_FN(sumOut));
    m.impl("mean", TORCH_FN(meanAll));
    m.impl("mean.dim", TORCH_FN(meanDims));
    m.impl("mean.out", TORCH_FN(meanOut));
    m.impl("prod", TORCH_FN(prodAll));
    m.impl("prod.dim_int", TORCH_FN(prodDim));
    m.impl("prod.int_out", TORCH_FN(prodOut));
    m.impl("max", TORCH_FN(maxAll));
    m.impl("min", TORCH_FN(minAll));
    m.impl("max.dim", TORCH_FN(maxDim));
    m.impl("min.dim", TORCH_FN(minDim));
    m.impl("max.dim_max", TORCH_FN(maxDimOut));
    m.impl("min.dim_min", TORCH_FN(minDimOut));
    m.impl("amax", TORCH_FN(amax));
    m.impl("amin", TORCH_FN(amin));
    m.impl("amax.out", TORCH_FN(amaxOut));
    m.impl("amin.out", TORCH_FN(aminOut));
    m.impl("argmax", TORCH_FN(argmax));
    m.impl("argmin", TORCH_FN(argmin));
    m.impl("argmax.out", TORCH_FN(argmaxOut));
    m.impl("argmin.out", TORCH_FN(argminOut));
    m.impl("var.correction", TORCH_FN(var));
    m.impl("std.correction", TORCH_FN(stdev));
    m.impl("var.correction_out", TORCH_FN(varOut));
    m.impl("std.correction_out", TORCH_FN(stdOut));
    m.impl("var_mean.correction", TORCH_FN(varMean));
    m.impl("std_mean.correction", TORCH_FN(stdMean));
    m.impl("linalg_vector_norm", TORCH_FN(vectorNorm));
    m.impl("linalg_vector_norm.out", TORCH_FN(vectorNormOut));
    m.impl("norm.Scalar", TORCH_FN(normScalar));
    m.impl("norm.ScalarOpt_dtype", TORCH_FN(normScalarOpt));
    m.impl("norm.ScalarOpt_dim", TORCH_FN(normDim));
    m.impl("norm.ScalarOpt_dim_dtype", TORCH_FN(normDtype));
    m.impl("norm.out", TORCH_FN(normOut));
    m.impl("all", TORCH_FN(allFull));
    m.impl("any", TORCH_FN(anyFull));
    m.impl("all.dim", TORCH_FN(allDim));
    m.impl("any.dim", TORCH_FN(anyDim));
    m.impl("all.dims", TORCH_FN(allDims));
    m.impl("any.dims", TORCH_FN(anyDims));
    m.impl("all.all_out", TORCH_FN(allFullOut));
    m.impl("any.all_out", TORCH_FN(anyFullOut));
    m.impl("all.out", TORCH_FN(allDimOut));
    m.impl("any.out", TORCH_FN(anyDimOut));
    m.impl("all.dims_out", TORCH_FN(allDimsOut));
    m.impl("any.dims_out", TORCH_FN(anyDimsOut));
    m.impl("logsumexp", TORCH_FN(logsumexp));
    m.impl("logsumexp.out", TORCH_FN(logsumexpOut));
    m.impl("cumsum", TORCH_FN(cumsum));
    m.impl("cumsum.out", TORCH_FN(cumsumOut));
    m.impl("cumsum_", TORCH_FN(cumsumInPlace));
    m.impl("cumprod", TORCH_FN(cumprod));
    m.impl("cumprod.out", TORCH_FN(cumprodOut));
    m.impl("cumprod_", TORCH_FN(cumprodInPlace));
    m.impl("_softmax", TORCH_FN(softmax));
    m.impl("_log_softmax", TORCH_FN(logSoftmax));
    m.impl("_softmax.out", TORCH_FN(softmaxOut));
    m.impl("_log_softmax.out", TORCH_FN(logSoftmaxOut));
    m.impl("_softmax_backward_data", TORCH_FN(softmaxBackwardData));
    m.impl("_log_softmax_backward_data", TORCH_FN(logSoftmaxBackwardData));
}
}  // namespace torch_mtia::reduce_ops
