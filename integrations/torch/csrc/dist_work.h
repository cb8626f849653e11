// The Work of the c10d backend's collectives, with NCCL's semantics: the collective runs on the
// group's stream after the caller's current stream; the Work holds an event recorded after it.
// wait() and synchronize() make the caller's current stream wait for that event (they do not block
// the host, as NCCL's do not); wait(timeout) with a timeout blocks the host until the event
// completes or raises when the timeout passes (NCCL's blocking wait). isCompleted() queries it. A
// failure seen (a sticky device error, a wait's timeout) is kept: isSuccess() is false, exception()
// returns it and wait() raises it again. The Work keeps the collective's tensors alive until it is
// destroyed (the allocator also knows the group's stream used them).
#pragma once

#include <mtia/mtia.h>

#include <ATen/core/ivalue.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <string>
#include <vector>

namespace torch_mtia::dist {

class MtiaWork : public c10d::Work {
public:
    // Records the event on stream (the group's stream, with the collective's work queued) and
    // makes the future, completed with outputs, on it. Throws c10::Error when the event cannot be
    // created or recorded.
    MtiaWork(int rank, c10d::OpType type, const char* title, c10::Device device,
             mtiaStream_t stream, std::vector<at::Tensor> inputs, std::vector<at::Tensor> outputs);
    ~MtiaWork() override;

    // Non-blocking; thread-safe. True once the collective's device work is done, or failed
    // (then isSuccess() is false and exception() holds the device's error).
    bool isCompleted() override;
    // Whether no failure has been seen (by isCompleted or wait). Thread-safe, non-blocking.
    bool isSuccess() const override;
    // Without a timeout: the current stream waits for the collective (non-blocking for the host;
    // legal during capture as a stream wait is). With one: blocks the host until the collective's
    // device work completed, then also orders the current stream after it; raises
    // c10::DistBackendError naming the collective and the rank when the timeout passes first (the
    // collective may still complete later; the group stays usable). Raises the device's error when
    // the work failed, and a failure seen before again. Returns true.
    bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
    void synchronize() override;
    std::vector<at::Tensor> result() override;
    c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;

private:
    // Keeps the failure (the first one) and throws it.
    [[noreturn]] void fail(const std::string& message);
    void rethrowIfFailed() const;

    int rank_;
    std::string title_;
    c10::Device device_;
    mtiaEvent_t event_ = nullptr;
    std::vector<at::Tensor> inputs_, outputs_;
    c10::intrusive_ptr<c10::ivalue::Future> future_;
};

}  // namespace torch_mtia::dist
