#include "dist_backend.h"

#include "../kernels/dist_params.h"
#include "device_kernels.h"
#include "dist_args.h"
#include "dist_liveness.h"
#include "dist_work.h"
#include "mtia_check.h"
#include "streams.h"
#include "tensor_args.h"

#include <c10/core/StreamGuard.h>

#include <algorithm>

namespace torch_mtia::dist {

namespace {

void checkDense(const at::Tensor& t, const char* collective, const char* what) {
    TORCH_CHECK(t.device().type() == c10::DeviceType::MTIA, "torch_mtia.distributed: ", collective,
                ": ", what, " must be an mtia tensor, got one on ", t.device());
    TORCH_CHECK(t.is_contiguous() && !t.is_sparse(), "torch_mtia.distributed: ", collective, ": ",
                what, " must be a dense contiguous tensor");
}

const at::Tensor& onlyTensor(const std::vector<at::Tensor>& tensors, const char* collective) {
    TORCH_CHECK(tensors.size() == 1, "torch_mtia.distributed: ", collective,
                " takes one tensor per process (one device per rank), got ", tensors.size());
    checkDense(tensors[0], collective, "the tensor");
    return tensors[0];
}

const char* reduceOpName(c10d::ReduceOp::RedOpType op) {
    switch (op) {
    case c10d::ReduceOp::SUM: return "SUM";
    case c10d::ReduceOp::AVG: return "AVG";
    case c10d::ReduceOp::PRODUCT: return "PRODUCT";
    case c10d::ReduceOp::MIN: return "MIN";
    case c10d::ReduceOp::MAX: return "MAX";
    case c10d::ReduceOp::BAND: return "BAND";
    case c10d::ReduceOp::BOR: return "BOR";
    case c10d::ReduceOp::BXOR: return "BXOR";
    case c10d::ReduceOp::PREMUL_SUM: return "PREMUL_SUM";
    default: return "UNUSED";
    }
}

// The reductions both paths take (PREMUL_SUM is rewritten to SUM of pre-multiplied tensors before
// either path sees it); the bitwise ones raise on both alike, as NCCL has none either.
void checkReduceOp(const c10d::ReduceOp& op, const char* collective) {
    switch (op.op_) {
    case c10d::ReduceOp::SUM:
    case c10d::ReduceOp::AVG:
    case c10d::ReduceOp::PRODUCT:
    case c10d::ReduceOp::MIN:
    case c10d::ReduceOp::MAX:
    case c10d::ReduceOp::PREMUL_SUM: return;
    default:
        TORCH_CHECK(false, "torch_mtia.distributed: ", collective,
                    ": the mtia backend reduces with SUM, AVG, PRODUCT, MIN, MAX and PREMUL_SUM, "
                    "not ",
                    reduceOpName(op.op_), " (NCCL has no bitwise reductions either)");
    }
}

bool isPreMulSum(const c10d::ReduceOp& op) {
    return op.op_ == c10d::ReduceOp::PREMUL_SUM;
}

// PREMUL_SUM's factor (torch.distributed._make_nccl_premul_sum) as a 0-dim tensor on t's device,
// to multiply t by on the caller's current stream before a SUM (so that the collective, which
// joins that stream, reduces the products). Floating tensors only, as the product must keep t's
// dtype.
at::Tensor preMulFactor(const c10d::ReduceOp& op, const at::Tensor& t, const char* collective) {
    const auto* supplement = dynamic_cast<const c10d::PreMulSumSupplement*>(op.supplement_.get());
    TORCH_CHECK(supplement != nullptr, "torch_mtia.distributed: ", collective,
                ": PREMUL_SUM without its factor (make it with "
                "torch.distributed._make_nccl_premul_sum)");
    TORCH_CHECK(at::isFloatingType(t.scalar_type()), "torch_mtia.distributed: ", collective,
                ": PREMUL_SUM multiplies floating tensors, got ", t.scalar_type());
    if (supplement->tensor_factor.defined()) {
        return supplement->tensor_factor.to(t.device(), t.scalar_type()).reshape({});
    }
    return at::scalar_tensor(supplement->double_factor, t.options());
}

c10d::ReduceOp sumOp() {
    return c10d::ReduceOp(c10d::ReduceOp::SUM);
}

int32_t kernelOp(const c10d::ReduceOp& op, const char* collective) {
    checkReduceOp(op, collective);
    switch (op.op_) {
    case c10d::ReduceOp::SUM: return mtiaTorchDistSum;
    case c10d::ReduceOp::AVG: return mtiaTorchDistAvg;
    case c10d::ReduceOp::PRODUCT: return mtiaTorchDistProduct;
    case c10d::ReduceOp::MIN: return mtiaTorchDistMin;
    case c10d::ReduceOp::MAX: return mtiaTorchDistMax;
    default:
        // PREMUL_SUM is rewritten by the collectives' entries before this.
        TORCH_CHECK(false, "torch_mtia.distributed: ", collective, ": ", reduceOpName(op.op_),
                    " reached the kernel unrewritten (a torch_mtia bug)");
    }
}

int32_t reducibleDtype(const at::Tensor& t, const char* collective) {
    TORCH_CHECK(kernelSupports(t.scalar_type()), "torch_mtia.distributed: ", collective,
                ": the mtia backend cannot reduce ", t.scalar_type(), " tensors");
    return kernelDtype(t.scalar_type());
}

char* bytesOf(const at::Tensor& t) {
    return static_cast<char*>(t.data_ptr());
}

void copyAsync(char* dst, const char* src, size_t bytes, mtiaStream_t stream) {
    if (bytes != 0) MTIA_CHECK(mtiaMemcpyAsync(dst, src, bytes, mtiaMemcpyDefault, stream));
}

// The caching allocator must not hand the tensors' memory out again before the group's stream
// is done with it, even if the caller drops them first (NCCL's recordStream on its stream).
void recordOnStream(const std::vector<at::Tensor>& tensors, mtiaStream_t stream) {
    for (const at::Tensor& t : tensors) {
        void* base = t.storage().mutable_data();
        if (base == nullptr) continue;
        // Memory the caching allocator did not hand out (from_blob over an mtiaMalloc of the
        // caller's) is not reused behind the caller's back: nothing to record.
        const mtiaError_t status = mtiaRecordStream(base, stream);
        if (status != mtiaErrorInvalidValue) MTIA_CHECK(status);
    }
}

// How long a barrier waits on the store before it looks at the peers' processes again: a dead
// peer fails the others within about this long (FileStore's timeouts have a granularity of one
// second: there, within about a second), while a step whose peers arrive in time pays nothing for
// it (its one wait returns as soon as the last rank arrives).
constexpr std::chrono::milliseconds kBarrierSlice{100};
// Up to this many ranks, each rank adds its own bit to a step's counter, so the counter says who
// arrived (no store operation more per step); beyond it, a plain count.
constexpr int kMaskRanks = 62;

}  // namespace

c10::DeviceIndex deviceOf(const std::vector<at::Tensor>& tensors) {
    if (!tensors.empty() && tensors[0].device().type() == c10::DeviceType::MTIA &&
        tensors[0].device().has_index()) {
        return tensors[0].device().index();
    }
    return currentDevice();
}

// Counts the threads inside a step or barrier (where the staging buffers are used), so that
// abort() on another thread does not release them under a collective's feet. Such a collective
// raises at its next check instead, and the group's next call (or its end) releases them: not on
// the way out of the step, where the collective's stream guard still holds the group's stream.
struct BusyScope {
    explicit BusyScope(MtiaBackend& b) : backend(b) { backend.busy_.fetch_add(1); }
    ~BusyScope() { backend.busy_.fetch_sub(1); }
    MtiaBackend& backend;
};

MtiaBackend::MtiaBackend(c10::intrusive_ptr<c10d::Store> store, int rank, int size,
                         std::chrono::milliseconds timeout)
    : c10d::Backend(rank, size), store_(std::move(store)), timeout_(timeout) {
    // Here, not at the first collective: every rank constructs the backend (init_process_group,
    // new_group), while a first send or recv would involve only two of them.
    std::vector<PeerProcess> processes;
    if (groupSpansHosts(store_, rank_, size_, timeout_, &processes)) {
        cross_ = std::make_unique<CrossHostComm>(store_, rank_, size_, timeout_);
        crossLiveness_ = PeerLiveness(rank_, std::move(processes));
    }
}

MtiaBackend::~MtiaBackend() {
    closeComm();
}

// Peers may still have to wait for this rank's last records when it leaves (they queue those
// waits after the step's barrier, which this rank may have passed long before): an IPC event that
// is gone fails such a wait. So this rank finishes its queued work, then says how many steps it
// completed ("left/<rank>"), and only then destroys its events; a peer that finds them gone reads
// the count to tell a rank that left after the step from one that died in it (waitPeer).
void MtiaBackend::closeComm() noexcept {
    std::lock_guard<std::mutex> lock(releaseMu_);
    if (!comm_ || comm_->stream() == nullptr) return;
    if (mtiaStreamSynchronize(comm_->stream()) == mtiaSuccess) {
        try {
            const std::string done = std::to_string(steps_);
            store_->set("left/" + std::to_string(rank_),
                        std::vector<uint8_t>(done.begin(), done.end()));
        } catch (...) {
            // The store is gone too: peers then see this rank's events gone and name it.
        }
    }
    comm_->close();
}

bool MtiaBackend::peerLeftAfter(int r, uint64_t steps) {
    const std::string key = "left/" + std::to_string(r);
    try {
        if (!store_->check({key})) return false;
        const std::vector<uint8_t> value = store_->get(key);
        return std::stoull(std::string(value.begin(), value.end())) >= steps;
    } catch (const std::exception&) {
        return false;
    }
}

void MtiaBackend::checkUsable() const {
    if (!stopped_.load()) return;
    std::lock_guard<std::mutex> lock(stateMu_);
    C10_THROW_ERROR(DistBackendError, failure_);
}

void MtiaBackend::failGroup(c10d::ErrorType type, const std::string& message) {
    {
        std::lock_guard<std::mutex> lock(stateMu_);
        if (failure_.empty()) {
            error_ = type;
            failure_ = message +
                       " [the process group is broken: every later collective raises; destroy it "
                       "and create a new one]";
        }
        stopped_.store(true);
    }
    C10_THROW_ERROR(DistBackendError, message);
}

void MtiaBackend::releaseIfIdle() {
    if (busy_.load() != 0) return;
    std::lock_guard<std::mutex> lock(releaseMu_);
    if (comm_) comm_->close();
}

void MtiaBackend::shutdown() {
    {
        std::lock_guard<std::mutex> lock(stateMu_);
        if (failure_.empty()) {
            failure_ = "torch_mtia.distributed: rank " + std::to_string(rank_) +
                       ": the process group was shut down (destroy_process_group)";
        }
        stopped_.store(true);
    }
    closeComm();
}

void MtiaBackend::abort() {
    {
        std::lock_guard<std::mutex> lock(stateMu_);
        if (failure_.empty()) {
            error_ = c10d::ErrorType::COMM_ERROR;
            failure_ = "torch_mtia.distributed: rank " + std::to_string(rank_) +
                       ": the process group was aborted";
        }
        stopped_.store(true);
    }
    releaseIfIdle();
}

c10d::ErrorType MtiaBackend::getError() {
    std::lock_guard<std::mutex> lock(stateMu_);
    return error_;
}

CrossHostComm* MtiaBackend::cross(c10::DeviceIndex device) {
    if (!cross_) return nullptr;
    // A group that was shut down, aborted or broken raises on either path.
    checkUsable();
    cross_->bind(device);
    return cross_.get();
}

SameHostComm& MtiaBackend::comm(const at::Tensor& t) {
    if (stopped_.load()) {
        releaseIfIdle();
        checkUsable();
    }
    const c10::DeviceIndex device = t.device().index();
    if (!comm_) {
        auto made = std::make_unique<SameHostComm>(store_, rank_, size_, device, timeout_);
        std::lock_guard<std::mutex> lock(releaseMu_);
        comm_ = std::move(made);
    }
    TORCH_CHECK(comm_->device() == device, "torch_mtia.distributed: rank ", rank_,
                " used mtia:", static_cast<int>(comm_->device()),
                " with this process group "
                "before and now mtia:",
                static_cast<int>(device),
                ": the mtia backend supports one device per rank and group");
    return *comm_;
}

void MtiaBackend::joinCaller(SameHostComm& c, const char* collective) {
    collective_ = collective != nullptr ? collective : "collective";
    DeviceScope scope(c.device());
    mtiaEvent_t event = nullptr;
    MTIA_CHECK(mtiaEventCreateWithFlags(&event, mtiaEventDisableTiming));
    const mtiaError_t recorded = mtiaEventRecord(event, streamHandle(currentStream(c.device())));
    const mtiaError_t waited =
        recorded == mtiaSuccess ? mtiaStreamWaitEvent(c.stream(), event, 0) : recorded;
    mtiaEventDestroy(event);
    MTIA_CHECK(waited);
}

void MtiaBackend::storeBarrier(uint64_t n) {
    checkUsable();
    const std::string key = "step/" + std::to_string(n);
    const bool masks = size_ <= kMaskRanks;
    const int64_t all = masks ? (int64_t{1} << size_) - 1 : size_;
    try {
        if (store_->add(key, masks ? int64_t{1} << rank_ : 1) == all) {
            store_->set(key + "/go", std::vector<uint8_t>{1});
        } else {
            awaitBarrier(key, n, all);
        }
    } catch (const c10::DistBackendError&) {
        throw;  // failGroup's
    } catch (const c10::Error& e) {
        failGroup(c10d::ErrorType::COMM_ERROR,
                  peerFailureMessage(comm_->liveness(), collective_, n, {},
                                     std::chrono::milliseconds(0), e.msg()));
    }
    // Every rank has passed barrier n - 1 to arrive here, so nobody waits on n - 2's keys any more:
    // dropping them keeps the store from growing with every step.
    if (rank_ == 0 && n >= 2) {
        const std::string old = "step/" + std::to_string(n - 2);
        try {
            store_->deleteKey(old);
            store_->deleteKey(old + "/go");
        } catch (const c10::Error&) {
            // A store without deleteKey only keeps the keys.
        }
    }
}

void MtiaBackend::awaitBarrier(const std::string& key, uint64_t n, int64_t all) {
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    const auto elapsed = [&] {
        return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    };
    const PeerLiveness& liveness = comm_->liveness();
    const bool masks = size_ <= kMaskRanks;
    for (;;) {
        const auto left = timeout_ - elapsed();
        const auto slice = std::clamp(left, std::chrono::milliseconds(1), kBarrierSlice);
        const auto sliceStart = Clock::now();
        try {
            store_->wait({key + "/go"}, slice);
            return;
        } catch (const c10::Error& e) {
            // A timeout (FileStore's is a plain c10::Error, TCPStore's a DistStoreError), or a
            // store that fails, which answers at once (TCPStore whose server's rank died).
            if (Clock::now() - sliceStart < slice / 2) {
                failGroup(c10d::ErrorType::COMM_ERROR,
                          peerFailureMessage(liveness, collective_, n, {}, elapsed(), e.msg()));
            }
        }
        if (stopped_.load()) checkUsable();  // aborted meanwhile
        const bool expired = elapsed() >= timeout_;
        const std::vector<int> gone = liveness.exitedRanks();
        if (!expired && gone.empty()) continue;
        const std::vector<uint8_t> counter = store_->get(key);
        const int64_t arrived = std::stoll(std::string(counter.begin(), counter.end()));
        // Everyone arrived: the last one died before it said so; the step itself is complete.
        if (arrived == all) return;
        std::vector<int> missing;
        if (masks) {
            for (int r = 0; r < size_; ++r) {
                if ((arrived & (int64_t{1} << r)) == 0) missing.push_back(r);
            }
        }
        const bool deadMissing =
            !masks ? !gone.empty() : std::any_of(gone.begin(), gone.end(), [&](int r) {
                return (arrived & (int64_t{1} << r)) == 0;
            });
        if (deadMissing) {
            failGroup(c10d::ErrorType::REMOTE_ERROR,
                      peerFailureMessage(liveness, collective_, n, missing, elapsed()));
        }
        if (expired) {
            failGroup(c10d::ErrorType::TIMEOUT,
                      peerFailureMessage(liveness, collective_, n, missing, elapsed()));
        }
    }
}

void MtiaBackend::waitPeer(SameHostComm& c, mtiaEvent_t event, int r, uint64_t steps) {
    const mtiaError_t status = mtiaStreamWaitEvent(c.stream(), event, 0);
    if (status == mtiaErrorInvalidHandle) {
        // It ended the group after its record completed: nothing to wait for.
        if (peerLeftAfter(r, steps)) return;
        failGroup(c10d::ErrorType::REMOTE_ERROR,
                  peerFailureMessage(c.liveness(), collective_, steps_, {},
                                     std::chrono::milliseconds(0),
                                     c.liveness().describe(r) + "'s IPC event is gone: " +
                                         describeFailure(status, "mtiaStreamWaitEvent")));
    }
    MTIA_CHECK(status);
}

// Why one store barrier per step is enough: an IPC event shows the exporter's latest record as of
// the wait (mtia_ipc.h). After barrier k, a peer's ready[k % 2] holds its record of step k (its
// next record of that event, step k + 2, needs barrier k + 1, which needs this rank). Before
// barrier k, a peer's done[k % 2] holds its record of step k - 2 (made before it arrived at
// barrier k - 1, which this rank has passed) and not yet step k's. So each wait sees exactly the
// record it needs.
void MtiaBackend::step(SameHostComm& c, const Fill& fill, const Consume& consume) {
    BusyScope busy(*this);
    checkUsable();
    const int parity = static_cast<int>(steps_ & 1);
    for (int r = 0; r < size_; ++r) {
        if (r != rank_) waitPeer(c, c.done(r, parity), r, steps_ >= 1 ? steps_ - 1 : 0);
    }
    fill(c.staging(rank_, parity));
    MTIA_CHECK(mtiaEventRecord(c.ready(rank_, parity), c.stream()));
    storeBarrier(steps_);
    for (int r = 0; r < size_; ++r) {
        if (r != rank_) waitPeer(c, c.ready(r, parity), r, steps_ + 1);
    }
    consume(parity);
    MTIA_CHECK(mtiaEventRecord(c.done(rank_, parity), c.stream()));
    ++steps_;
}

void MtiaBackend::reduceInto(SameHostComm& c, int parity, size_t srcOffset, at::ScalarType type,
                             int32_t op, int64_t count, char* dst) {
    mtiaTorchDistReduce p{};
    p.dtype = kernelDtype(type);
    p.op = op;
    p.sources = size_;
    p.count = count;
    for (int r = 0; r < size_; ++r) {
        p.src[r] = reinterpret_cast<uint64_t>(c.staging(r, parity) + srcOffset);
    }
    p.dst = reinterpret_cast<uint64_t>(dst);
    static ModuleKernel kernel("mtia_torch_dist_reduce");
    kernel.launch(p, gridFor(static_cast<uint64_t>(count)));
}

c10::intrusive_ptr<c10d::Work> MtiaBackend::broadcast(std::vector<at::Tensor>& tensors,
                                                      const c10d::BroadcastOptions& opts) {
    if (CrossHostComm* x = cross(deviceOf(tensors)))
        return crossCall("broadcast", [&] { return x->broadcast(tensors, opts); });
    const at::Tensor& t = onlyTensor(tensors, "broadcast");
    const int root = rootOf(opts.rootRank, "broadcast");
    SameHostComm& c = comm(t);
    joinCaller(c, "broadcast");
    c10::StreamGuard guard(toC10Stream(c.stream()));
    const size_t total = t.nbytes();
    char* data = bytesOf(t);
    for (size_t off = 0; off < total; off += c.stagingBytes()) {
        const size_t len = std::min(c.stagingBytes(), total - off);
        step(
            c,
            [&](char* mine) {
                if (rank_ == root) copyAsync(mine, data + off, len, c.stream());
            },
            [&](int parity) {
                if (rank_ != root) copyAsync(data + off, c.staging(root, parity), len, c.stream());
            });
    }
    recordOnStream(tensors, c.stream());
    return c10::make_intrusive<MtiaWork>(rank_, c10d::OpType::BROADCAST, "mtia:broadcast",
                                         t.device(), c.stream(), tensors, tensors);
}

c10::intrusive_ptr<c10d::Work> MtiaBackend::allreduce(std::vector<at::Tensor>& tensors,
                                                      const c10d::AllreduceOptions& opts) {
    checkReduceOp(opts.reduceOp, "all_reduce");
    if (isPreMulSum(opts.reduceOp)) {
        const at::Tensor& t = onlyTensor(tensors, "all_reduce");
        t.mul_(preMulFactor(opts.reduceOp, t, "all_reduce"));
        c10d::AllreduceOptions sum = opts;
        sum.reduceOp = sumOp();
        return allreduce(tensors, sum);
    }
    if (CrossHostComm* x = cross(deviceOf(tensors)))
        return crossCall("allreduce", [&] { return x->allreduce(tensors, opts); });
    onlyTensor(tensors, "all_reduce");
    c10d::AllreduceCoalescedOptions coalesced;
    coalesced.reduceOp = opts.reduceOp;
    coalesced.timeout = opts.timeout;
    coalesced.asyncOp = opts.asyncOp;
    return allreduce_coalesced(tensors, coalesced);
}

// Each rank reduces the whole of every chunk itself, reading every rank's staging buffer (one
// synchronisation per chunk). Reduce-scatter then all-gather would spread the arithmetic but needs
// a second synchronisation per chunk; which pays off where is for the benchmark to tell.
c10::intrusive_ptr<c10d::Work>
MtiaBackend::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                 const c10d::AllreduceCoalescedOptions& opts) {
    TORCH_CHECK(!tensors.empty(), "torch_mtia.distributed: all_reduce_coalesced: no tensors");
    checkReduceOp(opts.reduceOp, "all_reduce");
    if (isPreMulSum(opts.reduceOp)) {
        for (const at::Tensor& t : tensors) {
            checkDense(t, "all_reduce", "each tensor");
            t.mul_(preMulFactor(opts.reduceOp, t, "all_reduce"));
        }
        c10d::AllreduceCoalescedOptions sum = opts;
        sum.reduceOp = sumOp();
        return allreduce_coalesced(tensors, sum);
    }
    if (CrossHostComm* x = cross(deviceOf(tensors)))
        return crossCall("allreduce_coalesced",
                         [&] { return x->allreduce_coalesced(tensors, opts); });
    const int32_t op = kernelOp(opts.reduceOp, "all_reduce");
    for (const at::Tensor& t : tensors) {
        checkDense(t, "allreduce", "each tensor");
        reducibleDtype(t, "allreduce");
    }
    SameHostComm& c = comm(tensors[0]);
    for (const at::Tensor& t : tensors) comm(t);
    joinCaller(c, "all_reduce");
    c10::StreamGuard guard(toC10Stream(c.stream()));
    for (const at::Tensor& t : tensors) {
        const size_t es = t.element_size();
        const size_t chunk = c.stagingBytes() / es;
        const size_t n = static_cast<size_t>(t.numel());
        char* data = bytesOf(t);
        for (size_t off = 0; off < n; off += chunk) {
            const size_t len = std::min(chunk, n - off);
            step(
                c, [&](char* mine) { copyAsync(mine, data + off * es, len * es, c.stream()); },
                [&](int parity) {
                    reduceInto(c, parity, 0, t.scalar_type(), op, static_cast<int64_t>(len),
                               data + off * es);
                });
        }
    }
    recordOnStream(tensors, c.stream());
    return c10::make_intrusive<MtiaWork>(rank_, c10d::OpType::ALLREDUCE, "mtia:all_reduce",
                                         tensors[0].device(), c.stream(), tensors, tensors);
}

c10::intrusive_ptr<c10d::Work> MtiaBackend::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                      std::vector<at::Tensor>& inputs,
                                                      const c10d::AllgatherOptions& opts) {
    if (CrossHostComm* x = cross(deviceOf(inputs)))
        return crossCall("allgather", [&] { return x->allgather(outputs, inputs, opts); });
    const at::Tensor& in = onlyTensor(inputs, "allgather");
    TORCH_CHECK(outputs.size() == 1 && outputs[0].size() == static_cast<size_t>(size_),
                "torch_mtia.distributed: allgather: expected one list of ", size_,
                " output tensors");
    for (const at::Tensor& o : outputs[0]) {
        checkDense(o, "allgather", "each output");
        TORCH_CHECK(o.numel() == in.numel() && o.scalar_type() == in.scalar_type(),
                    "torch_mtia.distributed: allgather: each output must have the input's "
                    "element count and dtype");
    }
    SameHostComm& c = comm(in);
    joinCaller(c, "all_gather");
    c10::StreamGuard guard(toC10Stream(c.stream()));
    const size_t total = in.nbytes();
    const char* src = bytesOf(in);
    for (size_t off = 0; off < total; off += c.stagingBytes()) {
        const size_t len = std::min(c.stagingBytes(), total - off);
        step(
            c, [&](char* mine) { copyAsync(mine, src + off, len, c.stream()); },
            [&](int parity) {
                for (int r = 0; r < size_; ++r) {
                    copyAsync(bytesOf(outputs[0][r]) + off, c.staging(r, parity), len, c.stream());
                }
            });
    }
    std::vector<at::Tensor> kept = outputs[0];
    kept.push_back(in);
    recordOnStream(kept, c.stream());
    return c10::make_intrusive<MtiaWork>(rank_, c10d::OpType::ALLGATHER, "mtia:all_gather",
                                         in.device(), c.stream(), inputs, outputs[0]);
}

c10::intrusive_ptr<c10d::Work> MtiaBackend::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                            const c10d::AllgatherOptions& opts) {
    if (CrossHostComm* x = cross(deviceOf({input})))
        return crossCall("_allgather_base",
                         [&] { return x->_allgather_base(output, input, opts); });
    checkDense(input, "_allgather_base", "the input");
    checkDense(output, "_allgather_base", "the output");
    TORCH_CHECK(output.numel() == input.numel() * size_ &&
                    output.scalar_type() == input.scalar_type(),
                "torch_mtia.distributed: _allgather_base: the output must have world size (", size_,
                ") times the input's elements and its dtype");
    // The output as world-size views, one per rank: the same steps as allgather.
    std::vector<std::vector<at::Tensor>> outputs{output.view({-1}).chunk(size_)};
    if (input.numel() == 0) {
        outputs[0].assign(size_, output.view({-1}));
    }
    std::vector<at::Tensor> inputs{input};
    auto work = allgather(outputs, inputs, opts);
    return work;
}

c10::intrusive_ptr<c10d::Work>
MtiaBackend::reduce_scatter(std::vector<at::Tensor>& outputs,
                            std::vector<std::vector<at::Tensor>>& inputs,
                            const c10d::ReduceScatterOptions& opts) {
    checkReduceOp(opts.reduceOp, "reduce_scatter");
    if (isPreMulSum(opts.reduceOp)) {
        // The inputs stay as they are: their products go to the collective instead.
        TORCH_CHECK(inputs.size() == 1, "torch_mtia.distributed: reduce_scatter: expected one "
                                        "list of input tensors");
        std::vector<std::vector<at::Tensor>> scaled(1);
        for (const at::Tensor& i : inputs[0]) {
            checkDense(i, "reduce_scatter", "each input");
            scaled[0].push_back(i * preMulFactor(opts.reduceOp, i, "reduce_scatter"));
        }
        c10d::ReduceScatterOptions sum = opts;
        sum.reduceOp = sumOp();
        return reduce_scatter(outputs, scaled, sum);
    }
    if (CrossHostComm* x = cross(deviceOf(outputs)))
        return crossCall("reduce_scatter",
                         [&] { return x->reduce_scatter(outputs, inputs, opts); });
    const at::Tensor& out = onlyTensor(outputs, "reduce_scatter");
    TORCH_CHECK(inputs.size() == 1 && inputs[0].size() == static_cast<size_t>(size_),
                "torch_mtia.distributed: reduce_scatter: expected one list of ", size_,
                " input tensors");
    for (const at::Tensor& i : inputs[0]) {
        checkDense(i, "reduce_scatter", "each input");
        TORCH_CHECK(i.numel() == out.numel() && i.scalar_type() == out.scalar_type(),
                    "torch_mtia.distributed: reduce_scatter: each input must have the output's "
                    "element count and dtype");
    }
    const int32_t op = kernelOp(opts.reduceOp, "reduce_scatter");
    reducibleDtype(out, "reduce_scatter");
    SameHostComm& c = comm(out);
    joinCaller(c, "reduce_scatter");
    c10::StreamGuard guard(toC10Stream(c.stream()));
    const size_t es = out.element_size();
    // Each step stages the same slice of the input for every rank: slice d goes to rank d.
    const size_t chunk = c.stagingBytes() / (es * static_cast<size_t>(size_));
    const size_t n = static_cast<size_t>(out.numel());
    char* dst = bytesOf(out);
    for (size_t off = 0; off < n; off += chunk) {
        const size_t len = std::min(chunk, n - off);
        step(
            c,
            [&](char* mine) {
                for (int d = 0; d < size_; ++d) {
                    copyAsync(mine + d * len * es, bytesOf(inputs[0][d]) + off * es, len * es,
                              c.stream());
                }
            },
            [&](int parity) {
                reduceInto(c, parity, rank_ * len * es, out.scalar_type(), op,
                           static_cast<int64_t>(len), dst + off * es);
            });
    }
    std::vector<at::Tensor> kept = inputs[0];
    kept.push_back(out);
    recordOnStream(kept, c.stream());
    return c10::make_intrusive<MtiaWork>(rank_, c10d::OpType::REDUCE_SCATTER, "mtia:reduce_scatter",
                                         out.device(), c.stream(), inputs[0], outputs);
}

c10::intrusive_ptr<c10d::Work>
MtiaBackend::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                  const c10d::ReduceScatterOptions& opts) {
    checkReduceOp(opts.reduceOp, "reduce_scatter_tensor");
    if (isPreMulSum(opts.reduceOp)) {
        checkDense(input, "reduce_scatter_tensor", "the input");
        at::Tensor scaled = input * preMulFactor(opts.reduceOp, input, "reduce_scatter_tensor");
        c10d::ReduceScatterOptions sum = opts;
        sum.reduceOp = sumOp();
        return _reduce_scatter_base(output, scaled, sum);
    }
    if (CrossHostComm* x = cross(deviceOf({input})))
        return crossCall("_reduce_scatter_base",
                         [&] { return x->_reduce_scatter_base(output, input, opts); });
    checkDense(input, "_reduce_scatter_base", "the input");
    checkDense(output, "_reduce_scatter_base", "the output");
    TORCH_CHECK(input.numel() == output.numel() * size_ &&
                    output.scalar_type() == input.scalar_type(),
                "torch_mtia.distributed: _reduce_scatter_base: the input must have world size (",
                size_, ") times the output's elements and its dtype");
    std::vector<std::vector<at::Tensor>> inputs{input.view({-1}).chunk(size_)};
    if (output.numel() == 0) inputs[0].assign(size_, input.view({-1}));
    std::vector<at::Tensor> outputs{output};
    return reduce_scatter(outputs, inputs, opts);
}

int MtiaBackend::rootOf(int64_t root, const char* collective) const {
    TORCH_CHECK(root >= 0 && root < size_, "torch_mtia.distributed: ", collective, ": root rank ",
                root, " is not in the group of ", size_);
    return static_cast<int>(root);
}

// As allreduce, but only the root reduces (into its tensor); the others' tensors stay as they are
// (NCCL's reduce).
c10::intrusive_ptr<c10d::Work> MtiaBackend::reduce(std::vector<at::Tensor>& tensors,
                                                   const c10d::ReduceOptions& opts) {
    checkReduceOp(opts.reduceOp, "reduce");
    if (isPreMulSum(opts.reduceOp)) {
        // The root reduces into its tensor (multiplied in place first); the others' tensors stay
        // as they are, their products go to the collective.
        const at::Tensor& t = onlyTensor(tensors, "reduce");
        const at::Tensor factor = preMulFactor(opts.reduceOp, t, "reduce");
        c10d::ReduceOptions sum = opts;
        sum.reduceOp = sumOp();
        if (opts.rootRank == rank_) {
            t.mul_(factor);
            return reduce(tensors, sum);
        }
        std::vector<at::Tensor> scaled{t * factor};
        return reduce(scaled, sum);
    }
    if (CrossHostComm* x = cross(deviceOf(tensors)))
        return crossCall("reduce", [&] { return x->reduce(tensors, opts); });
    const at::Tensor& t = onlyTensor(tensors, "reduce");
    const int root = rootOf(opts.rootRank, "reduce");
    const int32_t op = kernelOp(opts.reduceOp, "reduce");
    reducibleDtype(t, "reduce");
    SameHostComm& c = comm(t);
    joinCaller(c, "reduce");
    c10::StreamGuard guard(toC10Stream(c.stream()));
    const size_t es = t.element_size();
    const size_t chunk = c.stagingBytes() / es;
    const size_t n = static_cast<size_t>(t.numel());
    char* data = bytesOf(t);
    for (size_t off = 0; off < n; off += chunk) {
        const size_t len = std::min(chunk, n - off);
        step(
            c, [&](char* mine) { copyAsync(mine, data + off * es, len * es, c.stream()); },
            [&](int parity) {
                if (rank_ == root) {
                    reduceInto(c, parity, 0, t.scalar_type(), op, static_cast<int64_t>(len),
                               data + off * es);
                }
            });
    }
    recordOnStream(tensors, c.stream());
    return c10::make_intrusive<MtiaWork>(rank_, c10d::OpType::REDUCE, "mtia:reduce", t.device(),
                                         c.stream(), tensors, tensors);
}

c10::intrusive_ptr<c10d::Work> MtiaBackend::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                   std::vector<at::Tensor>& inputs,
                                                   const c10d::GatherOptions& opts) {
    if (CrossHostComm* x = cross(deviceOf(inputs)))
        return crossCall("gather", [&] { return x->gather(outputs, inputs, opts); });
    const at::Tensor& in = onlyTensor(inputs, "gather");
    const int root = rootOf(opts.rootRank, "gather");
    const std::vector<at::Tensor> outs =
        rootList(outputs, rank_ == root, size_, in, "gather", "output", "input", checkDense);
    SameHostComm& c = comm(in);
    joinCaller(c, "gather");
    c10::StreamGuard guard(toC10Stream(c.stream()));
    const size_t total = in.nbytes();
    const char* src = bytesOf(in);
    for (size_t off = 0; off < total; off += c.stagingBytes()) {
        const size_t len = std::min(c.stagingBytes(), total - off);
        step(
            c, [&](char* mine) { copyAsync(mine, src + off, len, c.stream()); },
            [&](int parity) {
                for (size_t r = 0; r < outs.size(); ++r) {
                    copyAsync(bytesOf(outs[r]) + off, c.staging(static_cast<int>(r), parity), len,
                              c.stream());
                }
            });
    }
    std::vector<at::Tensor> kept = outs;
    kept.push_back(in);
    recordOnStream(kept, c.stream());
    return c10::make_intrusive<MtiaWork>(rank_, c10d::OpType::GATHER, "mtia:gather", in.device(),
                                         c.stream(), inputs, outs);
}

c10::intrusive_ptr<c10d::Work> MtiaBackend::scatter(std::vector<at::Tensor>& outputs,
                                                    std::vector<std::vector<at::Tensor>>& inputs,
                                                    const c10d::ScatterOptions& opts) {
    if (CrossHostComm* x = cross(deviceOf(outputs)))
        return crossCall("scatter", [&] { return x->scatter(outputs, inputs, opts); });
    const at::Tensor& out = onlyTensor(outputs, "scatter");
    const int root = rootOf(opts.rootRank, "scatter");
    const std::vector<at::Tensor> ins =
        rootList(inputs, rank_ == root, size_, out, "scatter", "input", "output", checkDense);
    SameHostComm& c = comm(out);
    joinCaller(c, "scatter");
    c10::StreamGuard guard(toC10Stream(c.stream()));
    // The root stages the same slice of every rank's input per step: slice d for rank d.
    const size_t slice = c.stagingBytes() / static_cast<size_t>(size_);
    const size_t total = out.nbytes();
    char* dst = bytesOf(out);
    for (size_t off = 0; off < total; off += slice) {
        const size_t len = std::min(slice, total - off);
        step(
            c,
            [&](char* mine) {
                for (size_t d = 0; d < ins.size(); ++d) {
                    copyAsync(mine + d * len, bytesOf(ins[d]) + off, len, c.stream());
                }
            },
            [&](int parity) {
                copyAsync(dst + off, c.staging(root, parity) + rank_ * len, len, c.stream());
            });
    }
    std::vector<at::Tensor> kept = ins;
    kept.push_back(out);
    recordOnStream(kept, c.stream());
    return c10::make_intrusive<MtiaWork>(rank_, c10d::OpType::SCATTER, "mtia:scatter", out.device(),
                                         c.stream(), ins, outputs);
}

c10::intrusive_ptr<c10d::Work> MtiaBackend::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                          std::vector<int64_t>& outputSplitSizes,
                                                          std::vector<int64_t>& inputSplitSizes,
                                                          const c10d::AllToAllOptions& opts) {
    if (CrossHostComm* x = cross(deviceOf({input})))
        return crossCall("alltoall_base", [&] {
            return x->alltoall_base(output, input, outputSplitSizes, inputSplitSizes, opts);
        });
    checkDense(input, "all_to_all_single", "the input");
    checkDense(output, "all_to_all_single", "the output");
    if (!outputSplitSizes.empty() || !inputSplitSizes.empty()) {
        return alltoallSplit(output, input, outputSplitSizes, inputSplitSizes);
    }
    TORCH_CHECK(input.numel() == output.numel() && input.scalar_type() == output.scalar_type() &&
                    input.numel() % size_ == 0,
                "torch_mtia.distributed: all_to_all_single: input and output must have the same "
                "dtype and element count, divisible by the world size (",
                size_, ")");
    SameHostComm& c = comm(input);
    joinCaller(c, "all_to_all_single");
    c10::StreamGuard guard(toC10Stream(c.stream()));
    // Rank r's d-th block goes to rank d's r-th block; each step stages the same part of every
    // block.
    const size_t block = input.nbytes() / static_cast<size_t>(size_);
    const size_t slice = c.stagingBytes() / static_cast<size_t>(size_);
    const char* src = bytesOf(input);
    char* dst = bytesOf(output);
    for (size_t off = 0; off < block; off += slice) {
        const size_t len = std::min(slice, block - off);
        step(
            c,
            [&](char* mine) {
                for (int d = 0; d < size_; ++d) {
                    copyAsync(mine + d * len, src + d * block + off, len, c.stream());
                }
            },
            [&](int parity) {
                for (int r = 0; r < size_; ++r) {
                    copyAsync(dst + r * block + off, c.staging(r, parity) + rank_ * len, len,
                              c.stream());
                }
            });
    }
    std::vector<at::Tensor> tensors{input, output};
    recordOnStream(tensors, c.stream());
    return c10::make_intrusive<MtiaWork>(
        rank_, c10d::OpType::ALLTOALL_BASE, "mtia:all_to_all", output.device(), c.stream(),
        std::vector<at::Tensor>{input}, std::vector<at::Tensor>{output});
}

// Every rank's collectives queued before it have finished on its device when barrier returns
// (the host waits for the group's stream, then meets the other ranks at the store).
c10::intrusive_ptr<c10d::Work> MtiaBackend::barrier(const c10d::BarrierOptions& opts) {
    c10::DeviceIndex device = currentDevice();
    if (opts.device.has_value() && opts.device->type() == c10::DeviceType::MTIA &&
        opts.device->has_index()) {
        device = opts.device->index();
    } else if (!opts.device_ids.empty()) {
        device = static_cast<c10::DeviceIndex>(opts.device_ids[0]);
    }
    if (stopped_.load()) {
        releaseIfIdle();
        checkUsable();
    }
    if (CrossHostComm* x = cross(device))
        return crossCall("barrier", [&] { return x->barrier(opts); });
    SameHostComm& c =
        comm_ ? *comm_
              : comm(at::empty({0}, at::TensorOptions().device(c10::DeviceType::MTIA, device)));
    BusyScope busy(*this);
    collective_ = "barrier";
    MTIA_CHECK(mtiaStreamSynchronize(c.stream()));
    storeBarrier(steps_++);
    return c10::make_intrusive<MtiaWork>(rank_, c10d::OpType::BARRIER, "mtia:barrier",
                                         c10::Device(c10::DeviceType::MTIA, c.device()), c.stream(),
                                         std::vector<at::Tensor>{}, std::vector<at::Tensor>{});
}

}  // namespace torch_mtia::dist
