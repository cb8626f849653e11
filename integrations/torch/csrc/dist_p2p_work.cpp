#include "dist_p2p_work.h"

#include "mtia_check.h"
#include "streams.h"

#include <c10/core/StreamGuard.h>

namespace torch_mtia::dist {

P2PWork::P2PWork(int rank, c10d::OpType type, const char* title, at::Tensor tensor, int peer,
                 std::chrono::milliseconds timeout)
    : c10d::Work(rank, type, title), tensor_(std::move(tensor)), peer_(peer), timeout_(timeout) {
    DeviceScope scope(tensor_.device().index());
    MTIA_CHECK(mtiaEventCreateWithFlags(&event_, mtiaEventDisableTiming));
    future_ = c10::make_intrusive<c10::ivalue::Future>(
        c10::ListType::create(c10::TensorType::get()), std::vector<c10::Device>{tensor_.device()});
}

P2PWork::~P2PWork() {
    if (event_ != nullptr) mtiaEventDestroy(event_);
}

void P2PWork::posted(mtiaStream_t stream, int source) {
    MTIA_CHECK(mtiaEventRecord(event_, stream));
    {
        std::lock_guard<std::mutex> lock(mutex_);
        source_ = source;
    }
    // The future's completion is an event on the channel's stream too (as MtiaWork's): a callback
    // that waits on it is ordered after the copies.
    c10::StreamGuard guard(toC10Stream(stream));
    future_->markCompleted(c10::IValue(std::vector<at::Tensor>{tensor_}));
    finish();
}

void P2PWork::failed(std::exception_ptr error) {
    future_->setErrorIfNeeded(error);
    finish(error);
}

void P2PWork::waitPosted(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    const bool done = cv_.wait_for(lock, timeout, [this] { return completed_; });
    TORCH_CHECK(done, "torch_mtia.distributed: ",
                opType_ == c10d::OpType::SEND ? "send to rank " : "receive from rank ",
                peer_ < 0 ? std::string("(any)") : std::to_string(peer_), " did not start within ",
                timeout.count(), " ms: the peer has not posted the matching ",
                opType_ == c10d::OpType::SEND ? "receive" : "send", " (same tag)");
    if (exception_) std::rethrow_exception(exception_);
}

bool P2PWork::isCompleted() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!completed_) return false;
    if (exception_) return true;
    const mtiaError_t status = mtiaEventQuery(event_);
    if (status == mtiaErrorNotReady) return false;
    MTIA_CHECK(status);
    return true;
}

bool P2PWork::isSuccess() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return !exception_;
}

int P2PWork::sourceRank() const {
    std::lock_guard<std::mutex> lock(mutex_);
    TORCH_CHECK(completed_ && !exception_, "torch_mtia.distributed: the source rank of a receive "
                                           "is known once wait() returned");
    return source_;
}

bool P2PWork::wait(std::chrono::milliseconds timeout) {
    waitPosted(timeout == ::kNoTimeout ? timeout_ : timeout);
    synchronize();
    return true;
}

void P2PWork::synchronize() {
    const c10::DeviceIndex device = tensor_.device().index();
    DeviceScope scope(device);
    MTIA_CHECK(mtiaStreamWaitEvent(streamHandle(currentStream(device)), event_, 0));
}

std::vector<at::Tensor> P2PWork::result() {
    return {tensor_};
}

c10::intrusive_ptr<c10::ivalue::Future> P2PWork::getFuture() {
    return future_;
}

}  // namespace torch_mtia::dist
