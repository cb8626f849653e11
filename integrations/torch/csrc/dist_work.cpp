#include "dist_work.h"

#include "mtia_check.h"
#include "streams.h"

#include <c10/core/StreamGuard.h>

#include <algorithm>
#include <thread>

namespace torch_mtia::dist {

MtiaWork::MtiaWork(int rank, c10d::OpType type, const char* title, c10::Device device,
                   mtiaStream_t stream, std::vector<at::Tensor> inputs,
                   std::vector<at::Tensor> outputs)
    : c10d::Work(rank, type, title), rank_(rank), title_(title), device_(device),
      inputs_(std::move(inputs)), outputs_(std::move(outputs)) {
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

void MtiaWork::fail(const std::string& message) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!exception_) {
        try {
            C10_THROW_ERROR(DistBackendError, message);
        } catch (...) {
            exception_ = std::current_exception();
        }
    }
    const std::exception_ptr first = exception_;
    lock.unlock();
    std::rethrow_exception(first);
}

void MtiaWork::rethrowIfFailed() const {
    std::exception_ptr failure;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        failure = exception_;
    }
    if (failure) std::rethrow_exception(failure);
}

bool MtiaWork::isCompleted() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (exception_) return true;
    }
    const mtiaError_t status = mtiaEventQuery(event_);
    if (status == mtiaErrorNotReady) return false;
    if (status != mtiaSuccess) {
        try {
            fail(std::string("torch_mtia.distributed: rank ") + std::to_string(rank_) + ": " +
                 title_ + " failed on the device: " + describeFailure(status, "mtiaEventQuery"));
        } catch (const c10::Error&) {
            // Kept for exception() and wait(); a query itself does not raise.
        }
    }
    return true;
}

bool MtiaWork::isSuccess() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return !exception_;
}

// Polls the event rather than blocking in mtiaEventSynchronize, which has no timeout: from 20 us
// doubling to 1 ms, so that a short collective returns within a few microseconds of its end.
bool MtiaWork::wait(std::chrono::milliseconds timeout) {
    rethrowIfFailed();
    if (timeout != kNoTimeout) {
        using Clock = std::chrono::steady_clock;
        const auto deadline = Clock::now() + timeout;
        auto pause = std::chrono::microseconds(20);
        for (;;) {
            const mtiaError_t status = mtiaEventQuery(event_);
            if (status == mtiaSuccess) break;
            if (status != mtiaErrorNotReady) {
                fail(std::string("torch_mtia.distributed: rank ") + std::to_string(rank_) + ": " +
                     title_ +
                     " failed on the device: " + describeFailure(status, "mtiaEventQuery"));
            }
            if (Clock::now() >= deadline) {
                fail(
                    std::string("torch_mtia.distributed: rank ") + std::to_string(rank_) + ": " +
                    title_ + " did not complete within " + std::to_string(timeout.count()) +
                    " ms (Work.wait's timeout): a peer has not done its part on its device yet, or "
                    "work queued before the collective on this rank's stream has not finished");
            }
            std::this_thread::sleep_for(pause);
            pause = std::min(pause * 2, std::chrono::microseconds(1000));
        }
    }
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
