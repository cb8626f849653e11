// The Work of the c10d backend's collectives, with NCCL's semantics: the collective runs on the
// group's stream after the caller's current stream; the Work holds an event recorded after it.
// wait() and synchronize() make the caller's current stream wait for that event (they do not block
// the host, as NCCL's do not); isCompleted() queries it. The Work keeps the collective's tensors
// alive until it is destroyed (the allocator also knows the group's stream used them).
#pragma once

#include <mtia/mtia.h>

#include <ATen/core/ivalue.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

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

    bool isCompleted() override;
    bool isSuccess() const override;
    bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
    void synchronize() override;
    std::vector<at::Tensor> result() override;
    c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;

private:
    c10::Device device_;
    mtiaEvent_t event_ = nullptr;
    std::vector<at::Tensor> inputs_, outputs_;
    c10::intrusive_ptr<c10::ivalue::Future> future_;
};

}  // namespace torch_mtia::dist
