// The host side of the pointwise kernel (kernels/pointwise_kernels.cpp), in the spirit of ATen's
// TensorIterator and written for this backend: broadcasting, PyTorch's type promotion (wrapped
// numbers and 0-dim tensors included), outputs allocated with the layout PyTorch gives them (the
// inputs' memory order: contiguous, channels-last, transposed or permuted), out= outputs resized
// and checked as PyTorch checks them, overlap checks, dimensions ordered innermost first and
// coalesced, CPU scalar operands passed by value. Every operator of ops_pointwise.cpp goes through
// runPointwise.
//
// Thread safety: reentrant (no shared state). Blocking: never waits for the device; launches on the
// current stream of the operands' device. Legal during graph capture. Errors: c10::Error with the
// CPU's messages for mismatched devices, shapes that do not broadcast, unsafe casts to an out= or
// in-place output, and overlapping outputs.
#pragma once

#include "../kernels/pointwise_params.h"

#include <ATen/Tensor.h>
#include <c10/core/Scalar.h>

#include <initializer_list>
#include <optional>

namespace torch_mtia {

struct PointwiseSpec {
    int32_t op = mtiaTorchPwCopy;
    // Integer and bool inputs compute in the default float dtype (true division, sqrt, sigmoid...).
    bool integerToFloat = false;
    // The output dtype when the output is allocated (bool for comparisons); else the common dtype.
    std::optional<at::ScalarType> resultType;
    // Inputs before this index do not take part in type promotion (where's condition).
    int promoteFrom = 0;
    // A CPU scalar on the right of a half or bfloat16 computation keeps its float value (the CPU's
    // mul and div read it in float); other CPU scalars are first rounded to the common dtype.
    bool rightScalarInOpMath = false;
    // Scalars of the operation (pointwise_params.h says which op reads which).
    double f[4] = {0, 0, 0, 0};
    int64_t i[4] = {0, 0, 0, 0};
};

enum class OutputKind {
    Allocate,  // a new output
    InPlace,   // out is inputs[0]: its shape and dtype stay
    Given      // out=: resized when its shape differs, its dtype must take the result
};

// Runs spec over inputs into out (undefined for OutputKind::Allocate) and returns the output.
at::Tensor runPointwise(const PointwiseSpec& spec, OutputKind kind, const at::Tensor& out,
                        std::initializer_list<at::Tensor> inputs);

// The dtype the inputs promote to, wrapped numbers and 0-dim tensors as PyTorch weighs them.
at::ScalarType commonType(std::initializer_list<at::Tensor> inputs, int from = 0);

// A Scalar as the 0-dim CPU "wrapped number" PyTorch makes of a Python number.
at::Tensor wrapScalar(const c10::Scalar& s);

// Whether t is a 0-dim CPU tensor, which PyTorch lets stand beside device tensors.
bool isCpuScalar(const at::Tensor& t);

}  // namespace torch_mtia
