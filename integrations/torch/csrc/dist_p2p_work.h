// The Work of one point-to-point message (dist_p2p.h). Unlike a collective's MtiaWork, its device
// work is queued later, by the channel's thread, once the peer has posted the matching operation:
// the work is "posted" when the last copy of the message is queued on the channel's stream, and its
// event is recorded after that copy.
//
// Semantics (gloo's for the host, NCCL's for the device): wait() blocks the host until the work is
// posted (the peer posted its side) or failed, throws the failure (a c10::Error naming the peer),
// then makes the caller's current stream wait for the event; it does not wait for the device.
// isCompleted() is true once posted and the copies finished on the device, or once failed.
// sourceRank() is the sender's rank once posted (what dist.recv(src=None) returns).
#pragma once

#include <mtia/mtia.h>

#include <ATen/core/ivalue.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <chrono>

namespace torch_mtia::dist {

class P2PWork : public c10d::Work {
public:
    // peer: the other rank (-1 for a receive from any source, until matched); timeout: how long
    // wait() without a timeout of its own waits for the peer to post. Creates the event (on the
    // tensor's device); throws c10::Error when it cannot.
    P2PWork(int rank, c10d::OpType type, const char* title, at::Tensor tensor, int peer,
            std::chrono::milliseconds timeout);
    ~P2PWork() override;

    // Called once by the channel's thread after queuing the message's copies on stream: records
    // the event there and completes the work and its future. source: the sender's rank.
    void posted(mtiaStream_t stream, int source);
    // Called once instead of posted() when the message cannot be transferred.
    void failed(std::exception_ptr error);
    // Blocks until posted() or failed() (the latter rethrown), or timeout passes (a c10::Error
    // naming the peer). Does not touch the caller's stream.
    void waitPosted(std::chrono::milliseconds timeout);
    // The event recorded after the message's copies (meaningful once posted).
    mtiaEvent_t event() const { return event_; }
    const at::Tensor& tensor() const { return tensor_; }

    bool isCompleted() override;
    bool isSuccess() const override;
    int sourceRank() const override;
    bool wait(std::chrono::milliseconds timeout = ::kNoTimeout) override;
    void synchronize() override;
    std::vector<at::Tensor> result() override;
    c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;

private:
    at::Tensor tensor_;
    int peer_;
    int source_ = -1;
    std::chrono::milliseconds timeout_;
    mtiaEvent_t event_ = nullptr;
    c10::intrusive_ptr<c10::ivalue::Future> future_;
};

}  // namespace torch_mtia::dist
