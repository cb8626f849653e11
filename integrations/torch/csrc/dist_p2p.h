// Point-to-point messages between the ranks of a process group on one host: the backend's send,
// recv and recv from any source, and all_to_all with split sizes (built on them). Only the two
// ranks of a message take part (no group-wide step), through the channel of their ordered pair
// (s, d), set up at its first message:
// - s owns a device staging buffer of two slots (MTIA_DIST_STAGING_BYTES each) and two interprocess
//   events "filled"; d owns two interprocess events "consumed"; each publishes its handles and its
//   host identity in the group's store.
// - Matching (gloo's rules): s publishes a header (tag, bytes) per message in its posting order;
//   d matches each header to its earliest posted receive with that tag from s or from any source,
//   and requests the message; the sequence of requests is the order the pair transfers in.
// - Transfer: the pair's chunk k goes through slot k % 2; s waits until d has consumed chunk k - 2,
//   copies into the slot, records filled and says "filled k" in the store; d waits for that, copies
//   out, records consumed and says "consumed k". The keys tell each host that the peer's record has
//   been made, so its stream waits on exactly that record (an IPC event shows the exporter's latest
//   record as of the wait, mtia_ipc.h).
// Each side of a channel runs on a thread of its own (sends to d; receives from s), so posting
// never blocks the caller: a rank may post its sends and receives in any order (batch_isend_irecv).
//
// Thread safety: send() and recv() may be called from any thread. Blocking: they do not wait for
// the peer (they make one store write at most); the work's wait() does.
#pragma once

#include "dist_p2p_work.h"

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace torch_mtia::dist {

class PointToPoint {
public:
    // store: the group's store; timeout: how long a posted operation waits for its peer (or a
    // started transfer for the peer's next step) before it fails naming the peer.
    PointToPoint(c10::intrusive_ptr<c10d::Store> store, int rank, int size,
                 std::chrono::milliseconds timeout);
    // Stops the channels' threads; operations not yet matched fail ("the process group was
    // destroyed"). Waits for this process's queued copies.
    ~PointToPoint();
    PointToPoint(const PointToPoint&) = delete;
    PointToPoint& operator=(const PointToPoint&) = delete;

    // Posts tensor (dense, contiguous, on this engine's device) for rank dst (not this rank) with
    // tag. The copies are ordered after the caller's current stream as of now. Errors (c10::Error):
    // bad dst, the tensor on another device than earlier messages, the channel failed earlier, the
    // runtime failing to set the channel up.
    c10::intrusive_ptr<P2PWork> send(const at::Tensor& tensor, int dst, int tag);
    // Posts a receive into tensor from rank src (-1: from whichever rank sends first with tag).
    // A message of another byte count than the tensor's fails both sides' works. Errors as send.
    c10::intrusive_ptr<P2PWork> recv(const at::Tensor& tensor, int src, int tag);

private:
    using Clock = std::chrono::steady_clock;
    struct Posted {
        uint64_t id;  // outgoing: the message number of the pair; incoming: the posting number
        int peer, tag;
        at::Tensor tensor;
        mtiaEvent_t joined;  // recorded on the caller's stream when posted
        c10::intrusive_ptr<P2PWork> work;
        Clock::time_point deadline;
    };
    struct Header {
        uint64_t msg;
        int64_t tag;
        uint64_t bytes;
    };
    struct Outbox;
    struct Inbox;
    enum class Await { Present, Stopped, Expired };

    void checkTensor(const at::Tensor& tensor, const char* what);
    Outbox& outbox(int dst);  // under mutex_
    Inbox& inbox(int src);    // under mutex_
    void runOutbox(Outbox& box, int dst);
    void runInbox(Inbox& box, int src);
    void transferOut(Outbox& box, Posted& send);
    void transferIn(Inbox& box, int src, Posted& recv, const Header& header);
    void openInbox(Inbox& box, int src);
    void openOutbox(Outbox& box, int dst);
    // Whether key appeared before deadline (polls the store; Stopped once the engine stops).
    Await awaitKey(const std::string& key, Clock::time_point deadline);
    // As awaitKey, but throws a c10::Error naming peer and what was awaited unless the key came.
    void needKey(const std::string& key, int peer, const char* what);
    std::string key(int src, int dst, const char* what, uint64_t n) const;
    // Fails op's work. Its future's callbacks are user code that may post more operations (which
    // take mutex_), so they run later, from deliverFailures(), which the channel threads call with
    // mutex_ released; fail() itself may be called with or without mutex_ held.
    void fail(Posted& op, const std::string& why);
    bool failuresPending();
    void deliverFailures();
    // Matches header from src with the earliest posted receive that takes it (under mutex_).
    bool matchHeader(Inbox& box, int src, const Header& header);

    c10::intrusive_ptr<c10d::Store> store_;
    int rank_, size_;
    std::chrono::milliseconds timeout_;
    size_t slotBytes_;
    c10::DeviceIndex device_ = -1;

    std::mutex mutex_;
    std::atomic<bool> stop_{false};
    uint64_t recvSeq_ = 0;
    std::deque<Posted> recvs_;  // posted receives not yet matched, in posting order
    std::vector<std::unique_ptr<Outbox>> out_;
    std::vector<std::unique_ptr<Inbox>> in_;
    std::mutex failedMu_;  // guards failed_ only; taken inside mutex_ or alone
    std::vector<std::pair<c10::intrusive_ptr<P2PWork>, std::exception_ptr>> failed_;
};

}  // namespace torch_mtia::dist
