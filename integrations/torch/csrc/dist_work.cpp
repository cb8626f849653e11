#include "dist_work.h"

#include "mtia_check.h"
#include "streams.h"

#include <c10/core/StreamGuard.h>

namespace torch_mtia::dist {

MtiaWork::MtiaWork(int rank, c10d::OpType type, const char* title, c10::Device device,
                   mtiaStream_t stream, std::vector<at::Tensor> inputs,
                   std::vector<at::Tensor> outputs)
    : c10d::Work(rank, type, title), device_(device), inputs_(std::move(inputs)),
      outputs_(std::move(outputs)) {
    DeviceScope scope(device.index());
    MTIA_CHECK(mtiaEventCreateWithFlags(&event_, mtiaEventDisableTiming));
    MTIA_CHECK(mtiaEventRecord(event_, stream));
    // The future's completion is an event on the group's stream too: a callback (DDP's comm hook)
    // that waits on it is ordered after the collective, as with NCCL's futures.
    c10::StreamGuard guard(toC10Stream(stream));
    future_ = c10::make_intrusive<c10::ivalue::Future>(
        c10::ListType::create(c10::TensorType::get()), std::vector<c10::Device>{device});
    future_->markCompleted(c10::IValue(outputs_));
}

MtiaWork::~MtiaWork() {
    if (event_ != nullptr) mtiaEventDestroy(event_);
}

bool MtiaWork::isCompleted() {
    const mtiaError_t status = mtiaEventQuery(event_);
    if (status == mtiaErrorNotReady) return false;
    MTIA_CHECK(status);
    return true;
}

bool MtiaWork::isSuccess() const {
    return true;
}

// Like NCCL's Work::wait: the caller's current stream waits for the collective, the host does not.
// A timeout is not enforced here yet (a peer that never arrives fails the store barrier instead,
// within the group's timeout).
bool MtiaWork::wait(std::chrono::milliseconds /*timeout*/) {
    synchronize();
    return true;
}

void MtiaWork::synchronize() {
    DeviceScope scope(device_.index());
    MTIA_CHECK(mtiaStreamWaitEvent(streamHandle(currentStream(device_.index())), event_, 0));
}

std::vector<at::Tensor> MtiaWork::result() {
    return outputs_;
}

c10::intrusive_ptr<c10::ivalue::Future> MtiaWork::getFuture() {
    return future_;
}

}  // namespace torch_mtia::dist
