// The c10d backend "mtia" (torch_mtia.distributed registers it for devices=["mtia"]): the
// collectives of a process group on MTIA tensors, for ranks that share one simulated machine
// (dist_peers.h). Each collective is queued on the group's stream after the caller's current
// stream and returns an MtiaWork (dist_work.h); point-to-point messages return a P2PWork.
//
// Thread safety: one thread per group at a time, as c10d requires of every rank's calls to a
// group (collectives must be called in the same order by every rank). Blocking: each step of a
// collective (at most MTIA_DIST_STAGING_BYTES of a tensor) waits on the host until every rank has
// queued it (a barrier through the store), not for the device; barrier() waits for the device.
//
// Failures: a rank that does not arrive at a step's barrier within the group's timeout, or whose
// process on this host exits meanwhile (noticed within about 100 ms; with a FileStore, whose waits
// time out in whole seconds, about a second), fails the collective on every other rank with
// c10::DistBackendError naming it (dist_liveness.h); from then on the group is broken: every
// collective raises at once, naming the first failure (the ranks could otherwise disagree on which
// steps happened). abort() and shutdown() end the group the same way.
#pragma once

#include "dist_cross_host.h"
#include "dist_p2p.h"
#include "dist_peers.h"

#include <torch/csrc/distributed/c10d/Backend.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace torch_mtia::dist {

// The device a collective's tensors name (the first one's), for the group's first collective to
// settle on; the current device when there is none to go by (the collective's checks then raise).
c10::DeviceIndex deviceOf(const std::vector<at::Tensor>& tensors);

class MtiaBackend : public c10d::Backend {
public:
    MtiaBackend(c10::intrusive_ptr<c10d::Store> store, int rank, int size,
                std::chrono::milliseconds timeout);
    ~MtiaBackend() override;

    const std::string getBackendName() const override { return "mtia"; }

    c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                             const c10d::BroadcastOptions& opts) override;
    c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                             const c10d::AllreduceOptions& opts) override;
    c10::intrusive_ptr<c10d::Work>
    allreduce_coalesced(std::vector<at::Tensor>& tensors,
                        const c10d::AllreduceCoalescedOptions& opts) override;
    c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                             std::vector<at::Tensor>& inputs,
                                             const c10d::AllgatherOptions& opts) override;
    c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                   const c10d::AllgatherOptions& opts) override;
    c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                  std::vector<std::vector<at::Tensor>>& inputs,
                                                  const c10d::ReduceScatterOptions& opts) override;
    c10::intrusive_ptr<c10d::Work>
    _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                         const c10d::ReduceScatterOptions& opts) override;
    c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                          const c10d::ReduceOptions& opts) override;
    c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::GatherOptions& opts) override;
    c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                           std::vector<std::vector<at::Tensor>>& inputs,
                                           const c10d::ScatterOptions& opts) override;
    // Empty split lists: equal splits, through the group's steps; split sizes (along dim 0, either
    // list may be empty for equal splits): through the point-to-point channels.
    c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                                 std::vector<int64_t>& outputSplitSizes,
                                                 std::vector<int64_t>& inputSplitSizes,
                                                 const c10d::AllToAllOptions& opts) override;
    c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;

    // Point-to-point (dist_backend_p2p.cpp, dist_p2p.h): only the two ranks take part; the work
    // is posted once the peer posted the matching operation (its wait() blocks the host until
    // then). tag >= 0 (negative tags are the backend's own); messages between a pair match in
    // posting order per tag, as gloo's.
    c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dstRank,
                                        int tag) override;
    c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int srcRank,
                                        int tag) override;
    c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors,
                                                 int tag) override;
    // outputTensors[r] receives inputTensors[rank] of rank r; any sizes (each pair must agree).
    c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputTensors,
                                            std::vector<at::Tensor>& inputTensors,
                                            const c10d::AllToAllOptions& opts) override;

    // Coalesced forms (dist_backend_coalesced.cpp): the collectives one after the other on the
    // group's stream; one work for all.
    c10::intrusive_ptr<c10d::Work>
    allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputTensorLists,
                        std::vector<at::Tensor>& inputTensors,
                        const c10d::AllgatherOptions& opts) override;
    c10::intrusive_ptr<c10d::Work>
    allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                    std::vector<at::Tensor>& inputs,
                                    const c10d::AllgatherOptions& opts) override;
    c10::intrusive_ptr<c10d::Work>
    reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                    std::vector<at::Tensor>& inputs,
                                    const c10d::ReduceScatterOptions& opts) override;

    // destroy_process_group's end of the group: waits for this rank's queued collectives (which
    // never hang on a dead peer: its events' waits end) and releases the staging buffers, IPC
    // imports and the stream, saying first through the store how many steps this rank completed
    // (so that a slower peer still waiting for its last records does not take the events' end
    // for a death); later collectives raise. Idempotent; not thread-safe against this
    // group's collectives (c10d calls it from the thread that ran them).
    void shutdown() override;
    // ProcessGroup.abort's end: later collectives raise, and a collective blocked in a step's
    // barrier on another thread raises within a barrier slice (100 ms; a second on a FileStore).
    // The device resources are released now, or, when a collective is inside a step on another
    // thread, by the group's next call (which raises) or its end. A collective being queued on
    // another thread outside its steps may raise the runtime's invalid-stream error instead of
    // "aborted". Thread-safe; never blocks on peers.
    void abort() override;
    // SUCCESS, or how the group failed: TIMEOUT (a rank did not arrive within the timeout),
    // REMOTE_ERROR (a peer exited), COMM_ERROR (the store failed, or the group was aborted).
    // Thread-safe, non-blocking.
    c10d::ErrorType getError() override;

private:
    // A step's part: fill writes this rank's staging buffer, consume reads everyone's (both on
    // the group's stream, which is current while they run).
    using Fill = std::function<void(char* mine)>;
    using Consume = std::function<void(int parity)>;

    SameHostComm& comm(const at::Tensor& t);
    // The cross-host communicator, bound to device, when the group spans hosts (decided at
    // construction: dist_cross_host.h); null when the same-host path serves the group.
    CrossHostComm* cross(c10::DeviceIndex device);
    // The stream the group's collectives ran on (either path's), after a collective ran.
    mtiaStream_t groupStream() const { return cross_ ? cross_->stream() : comm_->stream(); }
    // Queues one step on the group's stream: wait until peers are done reading this rank's buffer
    // of the step's parity (two steps ago), fill it, record ready, meet every rank at the store,
    // wait for their ready, consume, record done.
    void step(SameHostComm& c, const Fill& fill, const Consume& consume);
    // Every rank has arrived at barrier number n (through the store; timeout_ applies). Throws
    // (and breaks the group) naming the ranks that did not arrive.
    void storeBarrier(uint64_t n);
    // The part of storeBarrier that waits for the last rank: in slices, checking between them
    // whether a missing peer's process has exited or the group was aborted.
    void awaitBarrier(const std::string& key, uint64_t n, int64_t all);
    // The group's stream waits for the caller's current stream. collective names what runs, for
    // errors (nullptr: "collective").
    void joinCaller(SameHostComm& c, const char* collective = nullptr);
    // The group's stream waits for peer r's event, whose record r makes in its step `steps - 1`.
    // An event that is gone fails the group naming r, unless r left the group cleanly after
    // completing that many steps.
    void waitPeer(SameHostComm& c, mtiaEvent_t event, int r, uint64_t steps);
    // Whether peer r left the group (shutdown or destruction) after completing `steps` steps.
    bool peerLeftAfter(int r, uint64_t steps);
    // Finishes this rank's queued work, publishes "left/<rank>" and releases the communicator.
    void closeComm() noexcept;
    // Records the group's first failure (later collectives raise with it) and throws it.
    [[noreturn]] void failGroup(c10d::ErrorType type, const std::string& message);
    // Runs a collective on the cross-host path. When it fails and a peer on this host has exited
    // (gloo says only "Connection closed by peer <address>"), the group breaks with an error that
    // names the rank (failGroup); other errors (bad arguments, a peer on another host) pass
    // through.
    template <typename F>
    c10::intrusive_ptr<c10d::Work> crossCall(const char* collective, F&& run) {
        ++crossCalls_;
        try {
            return run();
        } catch (const std::exception& e) {
            // The backend's own errors (bad arguments) pass through at once.
            const auto* own = dynamic_cast<const c10::Error*>(&e);
            if (own != nullptr &&
                own->what_without_backtrace() ==
                    std::strstr(own->what_without_backtrace(), "torch_mtia.distributed")) {
                throw;
            }
            // gloo sees the connection drop while the peer's process is being torn down, a
            // little before its exit shows (pidfd): give same-host peers up to 2 s (the group's
            // timeout if shorter) to show it. An error path only.
            const auto deadline = std::chrono::steady_clock::now() +
                                  std::min(timeout_, std::chrono::milliseconds(2000));
            while (crossLiveness_.exitedRanks().empty() &&
                   std::chrono::steady_clock::now() < deadline) {
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
            }
            if (crossLiveness_.exitedRanks().empty()) throw;
            failGroup(c10d::ErrorType::REMOTE_ERROR,
                      explainCollectiveError(crossLiveness_, collective, crossCalls_, e));
        }
    }
    // Raises when the group failed, was aborted or shut down.
    void checkUsable() const;
    // Releases the communicator's device resources unless a thread is inside a step or barrier.
    void releaseIfIdle();
    // The rank of a root argument, checked against the group.
    int rootOf(int64_t root, const char* collective) const;
    void reduceInto(SameHostComm& c, int parity, size_t srcOffset, at::ScalarType type, int32_t op,
                    int64_t count, char* dst);

    PointToPoint& p2p();
    // all_to_all through the point-to-point channels: inputs[d] to rank d, outputs[r] from rank r
    // (this rank's own block copied on the group's stream); blocks the host until every pair has
    // posted.
    c10::intrusive_ptr<c10d::Work> alltoallPairs(std::vector<at::Tensor>& outputs,
                                                 std::vector<at::Tensor>& inputs, c10d::OpType type,
                                                 const char* title);
    c10::intrusive_ptr<c10d::Work> alltoallSplit(at::Tensor& output, at::Tensor& input,
                                                 std::vector<int64_t>& outputSplitSizes,
                                                 std::vector<int64_t>& inputSplitSizes);

    c10::intrusive_ptr<c10d::Store> store_;
    std::chrono::milliseconds timeout_;
    std::unique_ptr<SameHostComm> comm_;
    std::unique_ptr<CrossHostComm> cross_;
    PeerLiveness crossLiveness_;  // the cross-host group's same-host peers
    uint64_t crossCalls_ = 0;     // collectives run on the cross-host path (named in errors)
    uint64_t steps_ = 0;
    std::unique_ptr<PointToPoint> p2p_;  // at the first point-to-point message or all_to_all

    const char* collective_ = "collective";  // the collective being queued, for errors

    mutable std::mutex stateMu_;
    c10d::ErrorType error_ = c10d::ErrorType::SUCCESS;
    std::string failure_;               // the first failure, or why the group was ended
    std::atomic<bool> stopped_{false};  // failed, aborted or shut down: collectives raise
    std::atomic<int> busy_{0};          // threads inside step() or barrier()
    std::mutex releaseMu_;
    friend struct BusyScope;
};

}  // namespace torch_mtia::dist
