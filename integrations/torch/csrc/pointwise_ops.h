// The per-tensor bodies of the most frequent pointwise operators (ops_pointwise.cpp), each with
// the output kind as a parameter: the operator's own registered forms (functional, in place, out=)
// and the foreach operators (ops_foreach.cpp) share them, so both check, promote and round alike.
// out is undefined for OutputKind::Allocate, self for OutputKind::InPlace; each returns what
// runPointwise returns (the new output for OutputKind::Allocate).
//
// Thread safety: reentrant. Blocking: never waits for the device. Legal during graph capture.
// Errors: c10::Error with the CPU's messages (dtype refusals, shapes that do not broadcast, unsafe
// casts into out or self).
#pragma once

#include "pointwise.h"

#include <c10/util/string_view.h>

#include <optional>

namespace torch_mtia {

at::Tensor addSub(OutputKind kind, const at::Tensor& out, const at::Tensor& self,
                  const at::Tensor& other, const c10::Scalar& alpha, bool subtract);
at::Tensor mulAny(OutputKind kind, const at::Tensor& out, const at::Tensor& self,
                  const at::Tensor& other);
// True division without mode, else "trunc" or "floor".
at::Tensor divAny(OutputKind kind, const at::Tensor& out, const at::Tensor& self,
                  const at::Tensor& other, std::optional<c10::string_view> mode);
// op: a unary mtiaTorchPointwiseOp; toFloat: integer inputs compute in the default float dtype.
at::Tensor unary(OutputKind kind, const at::Tensor& out, const at::Tensor& self, int32_t op,
                 bool toFloat);
at::Tensor lerpScalar(OutputKind kind, const at::Tensor& out, const at::Tensor& self,
                      const at::Tensor& end, const c10::Scalar& weight);
at::Tensor lerpTensor(OutputKind kind, const at::Tensor& out, const at::Tensor& self,
                      const at::Tensor& end, const at::Tensor& weight);
at::Tensor addcmul(OutputKind kind, const at::Tensor& out, const at::Tensor& self,
                   const at::Tensor& t1, const at::Tensor& t2, const c10::Scalar& value);
at::Tensor addcdiv(OutputKind kind, const at::Tensor& out, const at::Tensor& self,
                   const at::Tensor& t1, const at::Tensor& t2, const c10::Scalar& value);

}  // namespace torch_mtia
