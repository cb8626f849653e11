// The cross-host side of the c10d backend: when the ranks of a group do not all share one host and
// one simulated machine (or any rank sets MTIA_DIST_FORCE_CROSS_HOST=1), the whole group runs its
// collectives through gloo (PyTorch's own CPU backend, created on a PrefixStore "mtia-gloo" of the
// group's store). Device tensors are staged through pinned host memory (mtiaMallocHost): copied to
// the host on the group's stream, combined by gloo on CPU tensors over those buffers, copied back
// on the group's stream. The elementwise collectives (broadcast, allreduce, reduce) go in chunks
// of MTIA_DIST_STAGING_BYTES through three pinned buffers, so that chunk k+1's device-to-host copy
// and chunk k-1's host-to-device copy run while gloo works on chunk k; the others stage their
// tensors whole, once.
//
// Ordering, as the same-host path (NCCL's semantics): a collective starts after the work queued on
// the caller's current stream, and the Work's event follows the copies back to the device. Unlike
// the same-host path, the calling thread blocks until gloo has finished (the device-to-host copies
// it waits for include the caller's queued work); only the last copies back may still be queued
// when a collective returns. Point-to-point is the exception: send, recv and recvAnysource return
// once the device-to-host copy (send) is done and gloo has the message in hand, and gloo moves it
// while the caller goes on (isend/irecv rings must not block); wait() waits for gloo, queues a
// receive's copy back, then orders the caller's current stream after it.
//
// Thread safety: one thread per group at a time (c10d's rule for a group's calls). None of these
// is legal during graph capture (the host waits for the device). Errors raise c10::Error naming
// the collective and the argument: a tensor not on this rank's device, not dense and contiguous,
// sizes that disagree; gloo's own errors (a peer gone, the timeout) pass through.
#pragma once

#include "dist_liveness.h"

#include <mtia/mtia.h>

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <array>
#include <chrono>
#include <functional>
#include <vector>

namespace torch_mtia::dist {

// Collective (every rank of the group calls it, with the same store): publishes this rank's host
// name, simulated machine and MTIA_DIST_FORCE_CROSS_HOST under "host/<rank>", waits (up to
// timeout) for every rank's, and says whether the group must take the cross-host path: true when
// two ranks differ in host or machine, or any rank forces it, so every rank decides alike.
// Blocking; throws c10::Error on a timeout, a malformed MTIA_DIST_FORCE_CROSS_HOST (only 0 or 1),
// or a record of another size (another torch_mtia version). processes, when not null, receives
// every rank's host and pid (for PeerLiveness).
bool groupSpansHosts(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                     std::chrono::milliseconds timeout,
                     std::vector<PeerProcess>* processes = nullptr);

// The group's cross-host communicator. Construction is collective (gloo's rendezvous on the store;
// blocks up to timeout). Every collective method has the signature and meaning of the
// c10d::Backend virtual of the same name, on MTIA tensors of this rank's device (the one bind()
// named first), and returns an MtiaWork (dist_work.h) as the same-host path does.
class CrossHostComm {
public:
    CrossHostComm(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                  std::chrono::milliseconds timeout);
    ~CrossHostComm();
    CrossHostComm(const CrossHostComm&) = delete;
    CrossHostComm& operator=(const CrossHostComm&) = delete;

    // The first call settles this rank's device (its stream and events are made there); later
    // calls do nothing (each collective then checks that its tensors are on that device). Not
    // thread-safe (the group's one thread); throws c10::Error when the stream or events cannot be
    // made.
    void bind(c10::DeviceIndex device);
    // The group's stream on the bound device (null before the first bind).
    mtiaStream_t stream() const { return stream_; }

    c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                             const c10d::BroadcastOptions& opts);
    // SUM, AVG (the sum divided by the world size; integers truncate, bool is or), PRODUCT, MIN,
    // MAX for every dtype the same-host path reduces (int16 is widened for gloo, bool reduced as
    // 0/1 bytes: SUM and MAX are or, PRODUCT and MIN and).
    c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                             const c10d::AllreduceOptions& opts);
    c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                       const c10d::AllreduceCoalescedOptions& opts);
    // The root's tensor gets the result; the others' stay as they were (NCCL's reduce).
    c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                          const c10d::ReduceOptions& opts);
    c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                             std::vector<at::Tensor>& inputs,
                                             const c10d::AllgatherOptions& opts);
    c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                   const c10d::AllgatherOptions& opts);
    c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::GatherOptions& opts);
    c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                           std::vector<std::vector<at::Tensor>>& inputs,
                                           const c10d::ScatterOptions& opts);
    // Through one all-reduce of every rank's whole input (gloo's reduce_scatter lacks int16, bool
    // and AVG): each rank receives world-size times its share, a cost of the cross-host path.
    c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                  std::vector<std::vector<at::Tensor>>& inputs,
                                                  const c10d::ReduceScatterOptions& opts);
    c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                        const c10d::ReduceScatterOptions& opts);
    // Split sizes count rows of dimension 0 (empty: equal splits), and may differ per rank.
    c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                                 std::vector<int64_t>& outputSplitSizes,
                                                 std::vector<int64_t>& inputSplitSizes,
                                                 const c10d::AllToAllOptions& opts);
    // inputTensors[r] goes to rank r, outputTensors[r] comes from rank r; sizes may differ, the
    // dtype must be one.
    c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputTensors,
                                            std::vector<at::Tensor>& inputTensors,
                                            const c10d::AllToAllOptions& opts);
    // Waits for this rank's queued collectives on the device, then for every rank (gloo).
    c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts);
    // Point to point, matched by tag; send returns once gloo has sent the bytes, recv once they
    // are queued back to the device. recvAnysource's Work tells the sender in sourceRank().
    c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dstRank, int tag);
    c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int srcRank, int tag);
    c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag);

private:
    // Chunk by chunk through the three pinned buffers: copy each chunk of t to the host when down,
    // run onHost on it (a CPU tensor of t's dtype over the pinned chunk), copy it back when up.
    void pipeline(const at::Tensor& t, bool down, bool up,
                  const std::function<void(at::Tensor& chunk)>& onHost);
    // Gloo's reduction of a pinned CPU tensor in place, for the dtypes and ops gloo lacks too;
    // root < 0: all-reduce.
    void reduceOnHost(at::Tensor& chunk, const c10d::ReduceOp& op, int root);
    // The group's stream waits for the caller's current stream.
    void joinCaller();
    // A pinned host copy of t (bytes), queued on the group's stream; the host must waitCopies()
    // before reading it.
    at::Tensor download(const at::Tensor& t);
    void upload(const at::Tensor& dst, const at::Tensor& host);
    void waitCopies();
    // What a receive does once gloo has filled host: t's copy back on the group's stream, and the
    // device side's work (its sourceRank the source it is given).
    std::function<c10::intrusive_ptr<c10d::Work>(int source)>
    uploadLater(const at::Tensor& t, const at::Tensor& host,
                const std::vector<at::Tensor>& tensors);
    c10::intrusive_ptr<c10d::Work> finish(c10d::OpType type, const char* title,
                                          std::vector<at::Tensor> inputs,
                                          std::vector<at::Tensor> outputs);
    void checkTensor(const at::Tensor& t, const char* collective, const char* what) const;
    int rootOf(int64_t root, const char* collective) const;

    int rank_, size_;
    c10::DeviceIndex device_ = -1;
    size_t chunkBytes_;
    mtiaStream_t stream_ = nullptr;
    std::array<mtiaEvent_t, 3> copied_{};
    c10::intrusive_ptr<c10d::Backend> gloo_;
};

}  // namespace torch_mtia::dist
