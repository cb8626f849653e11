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
#include "device_kernels.h"

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

// An operand of runPointwise, borrowed for the call: no reference count traffic (copying an
// at::Tensor that Python owns touches its PyObject under the GIL, a measurable share of a small
// operator's cost). Implicit from any tensor expression, temporaries included: those live until the
// call that takes the list returns.
class TensorRef {
public:
    TensorRef(const at::Tensor& t) : t_(&t) {}  // NOLINT(google-explicit-constructor)
    const at::Tensor& operator*() const { return *t_; }
    const at::Tensor* operator->() const { return t_; }
    const at::Tensor* get() const { return t_; }

private:
    const at::Tensor* t_;
};
using TensorRefs = std::initializer_list<TensorRef>;

enum class OutputKind {
    Allocate,  // a new output
    InPlace,   // out is inputs[0]: its shape and dtype stay
    Given      // out=: resized when its shape differs, its dtype must take the result
};

// Runs spec over inputs into out (undefined for OutputKind::Allocate). Returns the new output for
// OutputKind::Allocate, an undefined tensor otherwise (the caller holds out).
at::Tensor runPointwise(const PointwiseSpec& spec, OutputKind kind, const at::Tensor& out,
                        TensorRefs inputs);

// out= when out is defined, else a new output stored into out: the body of a structured operator's
// out= form that its functional form (registered directly, without PyTorch's meta pass) shares.
void runInto(const PointwiseSpec& spec, at::Tensor& out, TensorRefs inputs);

// Holds back the launches of runPointwise on this thread while it lives and sends them as launches
// of the batch kernel, up to MTIA_TORCH_POINTWISE_BATCH_MAX one-dimensional problems each: a
// foreach operator's per-tensor steps (ops_foreach.cpp) become one launch per 16 tensors instead of
// one each. The order of effects stays the issuing order: a problem of more than one dimension, any
// other launch (HeldLaunches), and a problem that touches a held problem's output release the held
// ones first.
//
// Thread safety: used by one thread; a batch made while another is active on the thread does
// nothing. Blocking: never waits for the device. Legal during graph capture. Errors: finish()
// throws as a launch throws; call it on the normal path. The destructor launches what is left and
// drops a launch error (it runs there only while another error unwinds).
class PointwiseBatch final : public HeldLaunches {
public:
    PointwiseBatch();
    ~PointwiseBatch() override;
    PointwiseBatch(const PointwiseBatch&) = delete;
    PointwiseBatch& operator=(const PointwiseBatch&) = delete;

    // Launches what is held and stops holding.
    void finish();
    void release() override;
    // The active batch of the calling thread, or null.
    static PointwiseBatch* active();
    // Takes p when it is one-dimensional (releasing first when it touches a held output); false
    // when the caller must launch p itself.
    bool hold(const mtiaTorchPointwise& p);

private:
    struct Span {
        uint64_t begin = 0, end = 0;
    };
    bool touchesHeld(const Span* outs, int nouts, const Span* ins, int nins) const;

    bool active_ = false;
    HeldLaunches* previous_ = nullptr;
    mtiaTorchPointwiseBatch batch_{};
    Span written_[MTIA_TORCH_POINTWISE_BATCH_MAX];
    Span read_[MTIA_TORCH_POINTWISE_BATCH_MAX * MTIA_TORCH_POINTWISE_MAX_INPUTS];
    int nread_ = 0;
};

// The dtype the inputs promote to, wrapped numbers and 0-dim tensors as PyTorch weighs them.
at::ScalarType commonType(TensorRefs inputs, int from = 0);

// A Scalar as the 0-dim CPU "wrapped number" PyTorch makes of a Python number.
at::Tensor wrapScalar(const c10::Scalar& s);

// Whether t is a 0-dim CPU tensor, which PyTorch lets stand beside device tensors.
bool isCpuScalar(const at::Tensor& t);

}  // namespace torch_mtia
