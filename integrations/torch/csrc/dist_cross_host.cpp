#include "dist_cross_host.h"

#include "allocator.h"
#include "dist_args.h"
#include "dist_liveness.h"
#include "dist_peers.h"
#include "dist_work.h"
#include "mtia_check.h"
#include "streams.h"
#include "tensor_args.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/utils/pybind.h>

#include <pybind11/chrono.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <numeric>

namespace torch_mtia::dist {

namespace {
// A nested name: the extension is one unity translation unit, where dist_backend.cpp's anonymous
// helpers are in scope too.
namespace xhost {

// What each rank publishes under "host/<rank>" before the group picks its path.
struct HostRecord {
    char host[256];
    uint8_t machine[16];
    uint8_t forceCrossHost;
    int32_t pid;  // for naming a peer that died (PeerLiveness)
};

bool forcedByEnv() {
    const char* text = std::getenv("MTIA_DIST_FORCE_CROSS_HOST");
    if (text == nullptr || *text == '\0') return false;
    TORCH_CHECK(std::strcmp(text, "0") == 0 || std::strcmp(text, "1") == 0,
                "torch_mtia.distributed: MTIA_DIST_FORCE_CROSS_HOST must be 0 or 1, got '", text,
                "'");
    return text[0] == '1';
}

// The gloo backend, made as torch.distributed.ProcessGroupGloo(store, rank, size, timeout) makes
// it (its default transport device, or GLOO_SOCKET_IFNAME's): the wheel ships no gloo headers to
// build one from C++, but its Python binding gives a c10d::Backend whose virtuals are enough.
c10::intrusive_ptr<c10d::Backend> makeGloo(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                           int size, std::chrono::milliseconds timeout) {
    namespace py = pybind11;
    py::gil_scoped_acquire gil;
    py::object backend = py::module_::import("torch.distributed")
                             .attr("ProcessGroupGloo")(store, rank, size, timeout);
    return backend.cast<c10::intrusive_ptr<c10d::Backend>>();
}

// A pinned host buffer of bytes (mtiaMallocHost through torch_mtia's pinned allocator: a copy from
// or to it is asynchronous, and its memory is reused only after the streams that copied it are
// done, so dropping the tensor with copies still queued is safe).
at::Tensor pinnedBytes(size_t bytes) {
    c10::Storage storage(c10::Storage::use_byte_size_t(), bytes, pinnedAllocator(), false);
    return at::empty({0}, at::TensorOptions(at::kByte))
        .set_(storage, 0, {static_cast<int64_t>(bytes)}, {1});
}

// The bytes of a contiguous tensor as a 1-D uint8 tensor (gloo moves any dtype so).
at::Tensor asBytes(const at::Tensor& t) {
    if (t.numel() == 0) return at::empty({0}, t.options().dtype(at::kByte));
    return t.view({-1}).view(at::kByte);
}

// The caching allocator must not reuse a device tensor's memory before the group's stream is done
// copying to it (dist_backend.cpp does the same for the same-host path).
void keepOnStream(const std::vector<at::Tensor>& tensors, mtiaStream_t stream) {
    for (const at::Tensor& t : tensors) {
        void* base = t.storage().mutable_data();
        if (base == nullptr) continue;
        const mtiaError_t status = mtiaRecordStream(base, stream);
        if (status != mtiaErrorInvalidValue) MTIA_CHECK(status);
    }
}

// A received message's Work: records its sender (recvAnysource).
class RecvWork final : public MtiaWork {
public:
    RecvWork(int rank, c10::Device device, mtiaStream_t stream, std::vector<at::Tensor> tensors,
             int source)
        : MtiaWork(rank, c10d::OpType::RECVANYSOURCE, "mtia:recv", device, stream, {}, tensors),
          source_(source) {}
    int sourceRank() const override { return source_; }

private:
    int source_;
};

// A point-to-point operation of the cross-host path: gloo moves the pinned host copy while the
// caller goes on, as isend and irecv must (a ring of blocking sends would deadlock). The first
// wait() or isCompleted() that finds gloo done runs complete(source) once: it queues what remains
// on the device (a receive's copy back) and returns the device side's MtiaWork, whose wait() then
// orders the caller's current stream after it (NCCL's semantics). Thread-safe.
class StagedP2PWork final : public c10d::Work {
public:
    using Complete = std::function<c10::intrusive_ptr<c10d::Work>(int source)>;
    // source: the peer of a receive from a known rank, -1 for a send or a receive from any rank.
    StagedP2PWork(int rank, c10d::OpType type, int source, c10::intrusive_ptr<c10d::Work> gloo,
                  at::Tensor host, Complete complete)
        : c10d::Work(rank, type), source_(source), gloo_(std::move(gloo)), host_(std::move(host)),
          complete_(std::move(complete)) {}

    bool isCompleted() override {
        if (!gloo_->isCompleted()) return false;
        return device()->isCompleted();
    }
    bool isSuccess() const override { return gloo_->isSuccess(); }
    bool wait(std::chrono::milliseconds timeout = kNoTimeout) override {
        gloo_->wait(timeout);
        return device()->wait(timeout);
    }
    void synchronize() override { wait(); }
    int sourceRank() const override {
        if (source_ >= 0) return source_;
        // gloo knows the sender of a receive from any rank; for a send, c10d's own error.
        return retrieveOpType() == c10d::OpType::RECVANYSOURCE ? gloo_->sourceRank()
                                                               : c10d::Work::sourceRank();
    }
    std::vector<at::Tensor> result() override { return device()->result(); }

private:
    // The device side, made once gloo is done (its errors raise from here).
    c10::intrusive_ptr<c10d::Work> device() {
        std::lock_guard<std::mutex> lock(deviceMu_);
        if (!device_) {
            device_ = complete_(retrieveOpType() == c10d::OpType::SEND ? -1 : sourceRank());
            host_ = at::Tensor();  // the copies that read it are queued before device_'s event
        }
        return device_;
    }

    int source_;
    c10::intrusive_ptr<c10d::Work> gloo_;
    at::Tensor host_;  // the pinned copy gloo reads or writes
    Complete complete_;
    std::mutex deviceMu_;
    c10::intrusive_ptr<c10d::Work> device_;
};

}  // namespace xhost
}  // namespace

bool groupSpansHosts(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                     std::chrono::milliseconds timeout, std::vector<PeerProcess>* processes) {
    xhost::HostRecord self{};
    {
        PeerRecord identity{};
        describeHost(identity);
        std::memcpy(self.host, identity.host, sizeof self.host);
        std::memcpy(self.machine, identity.machine, sizeof self.machine);
    }
    self.forceCrossHost = xhost::forcedByEnv() ? 1 : 0;
    self.pid = static_cast<int32_t>(getpid());
    if (processes != nullptr) {
        processes->assign(size, PeerProcess{});
        (*processes)[rank] = {self.host, self.pid};
    }
    const auto* bytes = reinterpret_cast<const uint8_t*>(&self);
    store->set("host/" + std::to_string(rank), std::vector<uint8_t>(bytes, bytes + sizeof self));
    std::vector<std::string> keys;
    for (int r = 0; r < size; ++r) keys.push_back("host/" + std::to_string(r));
    store->wait(keys, timeout);
    bool spans = self.forceCrossHost != 0;
    for (int r = 0; r < size; ++r) {
        if (r == rank) continue;
        const std::vector<uint8_t> got = store->get(keys[r]);
        TORCH_CHECK(got.size() == sizeof(xhost::HostRecord), "torch_mtia.distributed: rank ", r,
                    " published a host record of ", got.size(), " bytes, expected ",
                    sizeof(xhost::HostRecord), " (another torch_mtia version?)");
        xhost::HostRecord peer;
        std::memcpy(&peer, got.data(), sizeof peer);
        peer.host[sizeof peer.host - 1] = '\0';
        if (processes != nullptr) (*processes)[r] = {peer.host, peer.pid};
        spans = spans || peer.forceCrossHost != 0 || std::strcmp(peer.host, self.host) != 0 ||
                std::memcmp(peer.machine, self.machine, sizeof self.machine) != 0;
    }
    return spans;
}

CrossHostComm::CrossHostComm(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                             std::chrono::milliseconds timeout)
    : rank_(rank), size_(size), chunkBytes_(stagingBytesFromEnv()),
      gloo_(xhost::makeGloo(c10::make_intrusive<c10d::PrefixStore>("mtia-gloo", store), rank, size,
                            timeout)) {}

void CrossHostComm::bind(c10::DeviceIndex device) {
    if (stream_ != nullptr) return;
    DeviceScope scope(device);
    mtiaStream_t stream = nullptr;
    std::array<mtiaEvent_t, 3> events{};
    mtiaError_t status = mtiaStreamCreateWithFlags(&stream, mtiaStreamNonBlocking);
    for (size_t i = 0; i < events.size() && status == mtiaSuccess; ++i) {
        status = mtiaEventCreateWithFlags(&events[i], mtiaEventDisableTiming);
    }
    if (status != mtiaSuccess) {
        for (mtiaEvent_t e : events) {
            if (e != nullptr) mtiaEventDestroy(e);
        }
        if (stream != nullptr) mtiaStreamDestroy(stream);
        MTIA_CHECK(status);
    }
    device_ = device;
    stream_ = stream;
    copied_ = events;
}

CrossHostComm::~CrossHostComm() {
    if (stream_ == nullptr) return;
    DeviceScope scope(device_);
    mtiaStreamSynchronize(stream_);
    for (mtiaEvent_t e : copied_) mtiaEventDestroy(e);
    mtiaStreamDestroy(stream_);
}

void CrossHostComm::checkTensor(const at::Tensor& t, const char* collective,
                                const char* what) const {
    TORCH_CHECK(t.device().type() == c10::DeviceType::MTIA, "torch_mtia.distributed: ", collective,
                ": ", what, " must be an mtia tensor, got one on ", t.device());
    TORCH_CHECK(t.device().index() == device_, "torch_mtia.distributed: ", collective, ": ", what,
                " is on ", t.device(), " but rank ", rank_,
                " uses mtia:", static_cast<int>(device_),
                " with this process group (one device per rank and group)");
    TORCH_CHECK(t.is_contiguous() && !t.is_sparse(), "torch_mtia.distributed: ", collective, ": ",
                what, " must be a dense contiguous tensor");
}

int CrossHostComm::rootOf(int64_t root, const char* collective) const {
    TORCH_CHECK(root >= 0 && root < size_, "torch_mtia.distributed: ", collective, ": root rank ",
                root, " is not in the group of ", size_);
    return static_cast<int>(root);
}

void CrossHostComm::joinCaller() {
    mtiaEvent_t event = nullptr;
    MTIA_CHECK(mtiaEventCreateWithFlags(&event, mtiaEventDisableTiming));
    const mtiaError_t recorded = mtiaEventRecord(event, streamHandle(currentStream(device_)));
    const mtiaError_t waited =
        recorded == mtiaSuccess ? mtiaStreamWaitEvent(stream_, event, 0) : recorded;
    mtiaEventDestroy(event);
    MTIA_CHECK(waited);
}

at::Tensor CrossHostComm::download(const at::Tensor& t) {
    at::Tensor host = xhost::pinnedBytes(t.nbytes());
    if (t.nbytes() != 0) {
        MTIA_CHECK(mtiaMemcpyAsync(host.data_ptr(), t.data_ptr(), t.nbytes(),
                                   mtiaMemcpyDeviceToHost, stream_));
    }
    return host;
}

void CrossHostComm::upload(const at::Tensor& dst, const at::Tensor& host) {
    if (dst.nbytes() != 0) {
        MTIA_CHECK(mtiaMemcpyAsync(dst.data_ptr(), host.data_ptr(), dst.nbytes(),
                                   mtiaMemcpyHostToDevice, stream_));
    }
}

void CrossHostComm::waitCopies() {
    MTIA_CHECK(mtiaEventRecord(copied_[0], stream_));
    MTIA_CHECK(mtiaEventSynchronize(copied_[0]));
}

c10::intrusive_ptr<c10d::Work> CrossHostComm::finish(c10d::OpType type, const char* title,
                                                     std::vector<at::Tensor> inputs,
                                                     std::vector<at::Tensor> outputs) {
    std::vector<at::Tensor> kept = inputs;
    kept.insert(kept.end(), outputs.begin(), outputs.end());
    xhost::keepOnStream(kept, stream_);
    return c10::make_intrusive<MtiaWork>(rank_, type, title,
                                         c10::Device(c10::DeviceType::MTIA, device_), stream_,
                                         std::move(inputs), std::move(outputs));
}

// Chunk k lives in buffer k % 3. While the host waits for gloo on chunk k, the stream holds chunk
// k-1's copy back and chunk k+1's copy down, in two other buffers. The host touches buffer k % 3
// only after chunk k's copy down (recorded in copied_[k % 3]), which the stream runs after chunk
// k-3's copy back from the same buffer.
void CrossHostComm::pipeline(const at::Tensor& t, bool down, bool up,
                             const std::function<void(at::Tensor& chunk)>& onHost) {
    const size_t es = t.element_size();
    const size_t n = static_cast<size_t>(t.numel());
    if (n == 0) return;
    const size_t chunk = std::max<size_t>(1, chunkBytes_ / es);
    const size_t chunks = (n + chunk - 1) / chunk;
    std::array<at::Tensor, 3> buffers;
    for (size_t b = 0; b < std::min<size_t>(3, chunks); ++b) {
        buffers[b] = xhost::pinnedBytes(std::min(chunk, n) * es);
    }
    char* data = static_cast<char*>(t.data_ptr());
    auto lengthOf = [&](size_t k) { return std::min(chunk, n - k * chunk); };
    auto fetch = [&](size_t k) {
        const size_t b = k % 3;
        if (down) {
            MTIA_CHECK(mtiaMemcpyAsync(buffers[b].data_ptr(), data + k * chunk * es,
                                       lengthOf(k) * es, mtiaMemcpyDeviceToHost, stream_));
        }
        MTIA_CHECK(mtiaEventRecord(copied_[b], stream_));
    };
    fetch(0);
    for (size_t k = 0; k < chunks; ++k) {
        if (k + 1 < chunks) fetch(k + 1);
        const size_t b = k % 3;
        MTIA_CHECK(mtiaEventSynchronize(copied_[b]));
        at::Tensor host =
            buffers[b].narrow(0, 0, static_cast<int64_t>(lengthOf(k) * es)).view(t.scalar_type());
        onHost(host);
        if (up) {
            MTIA_CHECK(mtiaMemcpyAsync(data + k * chunk * es, buffers[b].data_ptr(),
                                       lengthOf(k) * es, mtiaMemcpyHostToDevice, stream_));
        }
    }
}

void CrossHostComm::reduceOnHost(at::Tensor& chunk, const c10d::ReduceOp& op, int root) {
    auto run = [&](at::Tensor& t, c10d::ReduceOp glooOp) {
        std::vector<at::Tensor> ts{t};
        if (root < 0) {
            c10d::AllreduceOptions o;
            o.reduceOp = glooOp;
            gloo_->allreduce(ts, o)->wait();
        } else {
            c10d::ReduceOptions o;
            o.reduceOp = glooOp;
            o.rootRank = root;
            gloo_->reduce(ts, o)->wait();
        }
    };
    const at::ScalarType type = chunk.scalar_type();
    if (type == at::kBool) {
        // NCCL's bool: sum (and average) is or, product is and: max and min of 0/1 bytes.
        const bool any =
            op == c10d::ReduceOp::SUM || op == c10d::ReduceOp::AVG || op == c10d::ReduceOp::MAX;
        at::Tensor bytes = chunk.view(at::kByte);
        run(bytes, any ? c10d::ReduceOp::MAX : c10d::ReduceOp::MIN);
        return;
    }
    const bool avg = op == c10d::ReduceOp::AVG;
    const c10d::ReduceOp glooOp = avg ? c10d::ReduceOp(c10d::ReduceOp::SUM) : op;
    if (type == at::kShort) {
        // gloo has no int16: reduce in int32, whose sums and products agree with int16's modulo
        // 2^16 (the narrowing wraps, as the device's int16 arithmetic does).
        at::Tensor wide = chunk.to(at::kInt);
        run(wide, glooOp);
        chunk.copy_(wide);
    } else {
        run(chunk, glooOp);
    }
    if (avg && (root < 0 || root == rank_)) {
        // The sum wrapped in the dtype, divided by the world size: integers truncate (NCCL's
        // ncclAvg, and the same-host path's kernel).
        if (at::isFloatingType(type)) {
            chunk.div_(size_);
        } else {
            chunk.div_(size_, "trunc");
        }
    }
}

namespace {
namespace xhost {

void checkReducible(const at::Tensor& t, const c10d::ReduceOp& op, const char* collective) {
    TORCH_CHECK(kernelSupports(t.scalar_type()), "torch_mtia.distributed: ", collective,
                ": the mtia backend cannot reduce ", t.scalar_type(), " tensors");
    switch (op.op_) {
    case c10d::ReduceOp::SUM:
    case c10d::ReduceOp::AVG:
    case c10d::ReduceOp::PRODUCT:
    case c10d::ReduceOp::MIN:
    case c10d::ReduceOp::MAX: return;
    default:
        TORCH_CHECK(false, "torch_mtia.distributed: ", collective,
                    ": the mtia backend supports the reduce ops SUM, AVG, PRODUCT, MIN, MAX");
    }
}

const at::Tensor& one(const std::vector<at::Tensor>& tensors, const char* collective) {
    TORCH_CHECK(tensors.size() == 1, "torch_mtia.distributed: ", collective,
                " takes one tensor per process (one device per rank), got ", tensors.size());
    return tensors[0];
}

}  // namespace xhost
}  // namespace

c10::intrusive_ptr<c10d::Work> CrossHostComm::broadcast(std::vector<at::Tensor>& tensors,
                                                        const c10d::BroadcastOptions& opts) {
    const at::Tensor& t = xhost::one(tensors, "broadcast");
    checkTensor(t, "broadcast", "the tensor");
    const int root = rootOf(opts.rootRank, "broadcast");
    DeviceScope scope(device_);
    joinCaller();
    pipeline(xhost::asBytes(t), rank_ == root, rank_ != root, [&](at::Tensor& chunk) {
        std::vector<at::Tensor> ts{chunk};
        c10d::BroadcastOptions o;
        o.rootRank = root;
        gloo_->broadcast(ts, o)->wait();
    });
    return finish(c10d::OpType::BROADCAST, "mtia:broadcast", tensors, tensors);
}

c10::intrusive_ptr<c10d::Work> CrossHostComm::allreduce(std::vector<at::Tensor>& tensors,
                                                        const c10d::AllreduceOptions& opts) {
    xhost::one(tensors, "allreduce");
    c10d::AllreduceCoalescedOptions coalesced;
    coalesced.reduceOp = opts.reduceOp;
    coalesced.timeout = opts.timeout;
    return allreduce_coalesced(tensors, coalesced);
}

c10::intrusive_ptr<c10d::Work>
CrossHostComm::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                   const c10d::AllreduceCoalescedOptions& opts) {
    TORCH_CHECK(!tensors.empty(), "torch_mtia.distributed: allreduce_coalesced: no tensors");
    for (const at::Tensor& t : tensors) {
        checkTensor(t, "allreduce", "each tensor");
        xhost::checkReducible(t, opts.reduceOp, "allreduce");
    }
    DeviceScope scope(device_);
    joinCaller();
    for (const at::Tensor& t : tensors) {
        pipeline(t, true, true, [&](at::Tensor& chunk) { reduceOnHost(chunk, opts.reduceOp, -1); });
    }
    return finish(c10d::OpType::ALLREDUCE, "mtia:all_reduce", tensors, tensors);
}

c10::intrusive_ptr<c10d::Work> CrossHostComm::reduce(std::vector<at::Tensor>& tensors,
                                                     const c10d::ReduceOptions& opts) {
    const at::Tensor& t = xhost::one(tensors, "reduce");
    checkTensor(t, "reduce", "the tensor");
    xhost::checkReducible(t, opts.reduceOp, "reduce");
    const int root = rootOf(opts.rootRank, "reduce");
    DeviceScope scope(device_);
    joinCaller();
    pipeline(t, true, rank_ == root,
             [&](at::Tensor& chunk) { reduceOnHost(chunk, opts.reduceOp, root); });
    return finish(c10d::OpType::REDUCE, "mtia:reduce", tensors, tensors);
}

c10::intrusive_ptr<c10d::Work>
CrossHostComm::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                         std::vector<at::Tensor>& inputs, const c10d::AllgatherOptions& /*opts*/) {
    const at::Tensor& in = xhost::one(inputs, "allgather");
    checkTensor(in, "allgather", "the input");
    TORCH_CHECK(outputs.size() == 1 && outputs[0].size() == static_cast<size_t>(size_),
                "torch_mtia.distributed: allgather expects one list of ", size_, " output tensors");
    for (const at::Tensor& o : outputs[0]) {
        checkTensor(o, "allgather", "each output");
        TORCH_CHECK(o.nbytes() == in.nbytes() && o.scalar_type() == in.scalar_type(),
                    "torch_mtia.distributed: allgather: each output must have the input's "
                    "element count and dtype");
    }
    DeviceScope scope(device_);
    joinCaller();
    at::Tensor host = download(in);
    std::vector<std::vector<at::Tensor>> got{{}};
    for (int r = 0; r < size_; ++r) got[0].push_back(xhost::pinnedBytes(in.nbytes()));
    waitCopies();
    std::vector<at::Tensor> ins{host};
    gloo_->allgather(got, ins)->wait();
    for (int r = 0; r < size_; ++r) upload(outputs[0][r], got[0][r]);
    return finish(c10d::OpType::ALLGATHER, "mtia:all_gather", inputs, outputs[0]);
}

c10::intrusive_ptr<c10d::Work> CrossHostComm::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                              const c10d::AllgatherOptions& opts) {
    checkTensor(input, "_allgather_base", "the input");
    checkTensor(output, "_allgather_base", "the output");
    TORCH_CHECK(output.numel() == input.numel() * size_ &&
                    output.scalar_type() == input.scalar_type(),
                "torch_mtia.distributed: _allgather_base: the output must have world size (", size_,
                ") times the input's elements and its dtype");
    DeviceScope scope(device_);
    joinCaller();
    at::Tensor host = download(input);
    at::Tensor whole = xhost::pinnedBytes(output.nbytes());
    std::vector<std::vector<at::Tensor>> got{{}};
    for (int r = 0; r < size_; ++r) {
        const auto len = static_cast<int64_t>(input.nbytes());
        got[0].push_back(whole.narrow(0, r * len, len));
    }
    waitCopies();
    std::vector<at::Tensor> ins{host};
    gloo_->allgather(got, ins, opts)->wait();
    upload(output, whole);
    return finish(c10d::OpType::_ALLGATHER_BASE, "mtia:all_gather_into_tensor", {input}, {output});
}

c10::intrusive_ptr<c10d::Work> CrossHostComm::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::GatherOptions& opts) {
    const at::Tensor& in = xhost::one(inputs, "gather");
    checkTensor(in, "gather", "the input");
    const int root = rootOf(opts.rootRank, "gather");
    const std::vector<at::Tensor> outs = rootList(
        outputs, rank_ == root, size_, in, "gather", "output", "input",
        [this](const at::Tensor& t, const char* c, const char* w) { checkTensor(t, c, w); });
    DeviceScope scope(device_);
    joinCaller();
    at::Tensor host = download(in);
    std::vector<std::vector<at::Tensor>> got;
    if (rank_ == root) {
        got.emplace_back();
        for (int r = 0; r < size_; ++r) got[0].push_back(xhost::pinnedBytes(in.nbytes()));
    }
    waitCopies();
    std::vector<at::Tensor> ins{host};
    c10d::GatherOptions o;
    o.rootRank = root;
    gloo_->gather(got, ins, o)->wait();
    for (size_t r = 0; r < outs.size(); ++r) upload(outs[r], got[0][r]);
    return finish(c10d::OpType::GATHER, "mtia:gather", inputs, outs);
}

c10::intrusive_ptr<c10d::Work> CrossHostComm::scatter(std::vector<at::Tensor>& outputs,
                                                      std::vector<std::vector<at::Tensor>>& inputs,
                                                      const c10d::ScatterOptions& opts) {
    const at::Tensor& out = xhost::one(outputs, "scatter");
    checkTensor(out, "scatter", "the output");
    const int root = rootOf(opts.rootRank, "scatter");
    const std::vector<at::Tensor> ins = rootList(
        inputs, rank_ == root, size_, out, "scatter", "input", "output",
        [this](const at::Tensor& t, const char* c, const char* w) { checkTensor(t, c, w); });
    DeviceScope scope(device_);
    joinCaller();
    std::vector<std::vector<at::Tensor>> sent;
    if (rank_ == root) {
        sent.emplace_back();
        for (const at::Tensor& i : ins) sent[0].push_back(download(i));
    }
    std::vector<at::Tensor> got{xhost::pinnedBytes(out.nbytes())};
    waitCopies();
    c10d::ScatterOptions o;
    o.rootRank = root;
    gloo_->scatter(got, sent, o)->wait();
    upload(out, got[0]);
    return finish(c10d::OpType::SCATTER, "mtia:scatter", ins, outputs);
}

c10::intrusive_ptr<c10d::Work>
CrossHostComm::reduce_scatter(std::vector<at::Tensor>& outputs,
                              std::vector<std::vector<at::Tensor>>& inputs,
                              const c10d::ReduceScatterOptions& opts) {
    const at::Tensor& out = xhost::one(outputs, "reduce_scatter");
    checkTensor(out, "reduce_scatter", "the output");
    xhost::checkReducible(out, opts.reduceOp, "reduce_scatter");
    TORCH_CHECK(inputs.size() == 1 && inputs[0].size() == static_cast<size_t>(size_),
                "torch_mtia.distributed: reduce_scatter expects one list of ", size_,
                " input tensors");
    for (const at::Tensor& i : inputs[0]) {
        checkTensor(i, "reduce_scatter", "each input");
        TORCH_CHECK(i.numel() == out.numel() && i.scalar_type() == out.scalar_type(),
                    "torch_mtia.distributed: reduce_scatter: each input must have the output's "
                    "element count and dtype");
    }
    DeviceScope scope(device_);
    joinCaller();
    const size_t len = out.nbytes();
    at::Tensor whole = xhost::pinnedBytes(len * size_);
    for (int d = 0; d < size_; ++d) {
        if (len == 0) break;
        MTIA_CHECK(mtiaMemcpyAsync(static_cast<char*>(whole.data_ptr()) + d * len,
                                   inputs[0][d].data_ptr(), len, mtiaMemcpyDeviceToHost, stream_));
    }
    waitCopies();
    if (len != 0) {
        at::Tensor typed = whole.view(out.scalar_type());
        reduceOnHost(typed, opts.reduceOp, -1);
        upload(out, whole.narrow(0, static_cast<int64_t>(rank_ * len), static_cast<int64_t>(len)));
    }
    return finish(c10d::OpType::REDUCE_SCATTER, "mtia:reduce_scatter", inputs[0], outputs);
}

c10::intrusive_ptr<c10d::Work>
CrossHostComm::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                    const c10d::ReduceScatterOptions& opts) {
    checkTensor(input, "_reduce_scatter_base", "the input");
    checkTensor(output, "_reduce_scatter_base", "the output");
    TORCH_CHECK(input.numel() == output.numel() * size_ &&
                    output.scalar_type() == input.scalar_type(),
                "torch_mtia.distributed: _reduce_scatter_base: the input must have world size (",
                size_, ") times the output's elements and its dtype");
    std::vector<std::vector<at::Tensor>> inputs{input.view({-1}).chunk(size_)};
    if (output.numel() == 0) inputs[0].assign(size_, input.view({-1}));
    std::vector<at::Tensor> outputs{output};
    return reduce_scatter(outputs, inputs, opts);
}

c10::intrusive_ptr<c10d::Work> CrossHostComm::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                            std::vector<int64_t>& outputSplitSizes,
                                                            std::vector<int64_t>& inputSplitSizes,
                                                            const c10d::AllToAllOptions& opts) {
    checkTensor(input, "all_to_all_single", "the input");
    checkTensor(output, "all_to_all_single", "the output");
    TORCH_CHECK(input.scalar_type() == output.scalar_type(),
                "torch_mtia.distributed: all_to_all_single: input and output must have one dtype");
    // Split sizes in rows of dimension 0, turned into bytes of the flat tensors gloo moves.
    auto bytesOf = [&](const at::Tensor& t, const std::vector<int64_t>& splits, const char* what) {
        std::vector<int64_t> bytes;
        if (splits.empty()) {
            TORCH_CHECK(t.numel() % size_ == 0, "torch_mtia.distributed: all_to_all_single: the ",
                        what, " has ", t.numel(), " elements, not divisible by the world size (",
                        size_, "): pass split sizes");
            return bytes;
        }
        TORCH_CHECK(splits.size() == static_cast<size_t>(size_) && t.dim() >= 1,
                    "torch_mtia.distributed: all_to_all_single: ", what,
                    " split sizes must have one entry per rank (", size_, ") and the ", what,
                    " at least one dimension");
        const int64_t rows = t.size(0);
        int64_t sum = 0;
        for (int64_t s : splits) {
            TORCH_CHECK(s >= 0, "torch_mtia.distributed: all_to_all_single: negative ", what,
                        " split size ", s);
            sum += s;
        }
        TORCH_CHECK(sum == rows, "torch_mtia.distributed: all_to_all_single: the ", what,
                    " split sizes add up to ", sum, " rows but the ", what, " has ", rows);
        const int64_t rowBytes = rows == 0 ? 0 : static_cast<int64_t>(t.nbytes()) / rows;
        for (int64_t s : splits) bytes.push_back(s * rowBytes);
        return bytes;
    };
    std::vector<int64_t> outBytes = bytesOf(output, outputSplitSizes, "output");
    std::vector<int64_t> inBytes = bytesOf(input, inputSplitSizes, "input");
    TORCH_CHECK(!outputSplitSizes.empty() || !inputSplitSizes.empty() ||
                    input.numel() == output.numel(),
                "torch_mtia.distributed: all_to_all_single: with equal splits input and output "
                "must have the same element count");
    DeviceScope scope(device_);
    joinCaller();
    at::Tensor in = download(input);
    at::Tensor out = xhost::pinnedBytes(output.nbytes());
    waitCopies();
    gloo_->alltoall_base(out, in, outBytes, inBytes, opts)->wait();
    upload(output, out);
    return finish(c10d::OpType::ALLTOALL_BASE, "mtia:all_to_all", {input}, {output});
}

c10::intrusive_ptr<c10d::Work> CrossHostComm::alltoall(std::vector<at::Tensor>& outputTensors,
                                                       std::vector<at::Tensor>& inputTensors,
                                                       const c10d::AllToAllOptions& opts) {
    TORCH_CHECK(outputTensors.size() == static_cast<size_t>(size_) &&
                    inputTensors.size() == static_cast<size_t>(size_),
                "torch_mtia.distributed: all_to_all expects ", size_,
                " input and output tensors, got ", inputTensors.size(), " and ",
                outputTensors.size());
    const at::ScalarType type = inputTensors[0].scalar_type();
    std::vector<int64_t> inBytes, outBytes;
    for (int r = 0; r < size_; ++r) {
        checkTensor(inputTensors[r], "all_to_all", "each input");
        checkTensor(outputTensors[r], "all_to_all", "each output");
        TORCH_CHECK(inputTensors[r].scalar_type() == type && outputTensors[r].scalar_type() == type,
                    "torch_mtia.distributed: all_to_all: every input and output must have one "
                    "dtype");
        inBytes.push_back(static_cast<int64_t>(inputTensors[r].nbytes()));
        outBytes.push_back(static_cast<int64_t>(outputTensors[r].nbytes()));
    }
    DeviceScope scope(device_);
    joinCaller();
    // Packed into one buffer each way, with byte split sizes: one gloo all-to-all.
    at::Tensor in = xhost::pinnedBytes(
        static_cast<size_t>(std::accumulate(inBytes.begin(), inBytes.end(), int64_t{0})));
    at::Tensor out = xhost::pinnedBytes(
        static_cast<size_t>(std::accumulate(outBytes.begin(), outBytes.end(), int64_t{0})));
    int64_t off = 0;
    for (int r = 0; r < size_; ++r) {
        if (inBytes[r] != 0) {
            MTIA_CHECK(mtiaMemcpyAsync(static_cast<char*>(in.data_ptr()) + off,
                                       inputTensors[r].data_ptr(), inBytes[r],
                                       mtiaMemcpyDeviceToHost, stream_));
        }
        off += inBytes[r];
    }
    waitCopies();
    // gloo's alltoall_base moves the split vectors away: it gets copies.
    std::vector<int64_t> outSplits = outBytes, inSplits = inBytes;
    gloo_->alltoall_base(out, in, outSplits, inSplits, opts)->wait();
    off = 0;
    for (int r = 0; r < size_; ++r) {
        upload(outputTensors[r], out.narrow(0, off, outBytes[r]));
        off += outBytes[r];
    }
    return finish(c10d::OpType::ALLTOALL, "mtia:all_to_all", inputTensors, outputTensors);
}

c10::intrusive_ptr<c10d::Work> CrossHostComm::barrier(const c10d::BarrierOptions& /*opts*/) {
    DeviceScope scope(device_);
    MTIA_CHECK(mtiaStreamSynchronize(stream_));
    gloo_->barrier(c10d::BarrierOptions())->wait();
    return finish(c10d::OpType::BARRIER, "mtia:barrier", {}, {});
}

c10::intrusive_ptr<c10d::Work> CrossHostComm::send(std::vector<at::Tensor>& tensors, int dstRank,
                                                   int tag) {
    const at::Tensor& t = xhost::one(tensors, "send");
    checkTensor(t, "send", "the tensor");
    TORCH_CHECK(dstRank >= 0 && dstRank < size_ && dstRank != rank_,
                "torch_mtia.distributed: send: destination rank ", dstRank,
                " is not another rank of the group of ", size_);
    DeviceScope scope(device_);
    joinCaller();
    std::vector<at::Tensor> host{download(t)};
    waitCopies();
    c10::intrusive_ptr<c10d::Work> sent = gloo_->send(host, dstRank, tag);
    return c10::make_intrusive<xhost::StagedP2PWork>(
        rank_, c10d::OpType::SEND, -1, std::move(sent), host[0],
        [rank = rank_, device = device_, stream = stream_, kept = tensors](int) {
            return c10::make_intrusive<MtiaWork>(rank, c10d::OpType::SEND, "mtia:send",
                                                 c10::Device(c10::DeviceType::MTIA, device), stream,
                                                 kept, std::vector<at::Tensor>{});
        });
}

c10::intrusive_ptr<c10d::Work> CrossHostComm::recv(std::vector<at::Tensor>& tensors, int srcRank,
                                                   int tag) {
    const at::Tensor& t = xhost::one(tensors, "recv");
    checkTensor(t, "recv", "the tensor");
    TORCH_CHECK(srcRank >= 0 && srcRank < size_ && srcRank != rank_,
                "torch_mtia.distributed: recv: source rank ", srcRank,
                " is not another rank of the group of ", size_);
    DeviceScope scope(device_);
    joinCaller();
    std::vector<at::Tensor> host{xhost::pinnedBytes(t.nbytes())};
    // The copy back must follow the caller's queued work on t (joined above); gloo may write the
    // new buffer at once.
    c10::intrusive_ptr<c10d::Work> got = gloo_->recv(host, srcRank, tag);
    return c10::make_intrusive<xhost::StagedP2PWork>(rank_, c10d::OpType::RECV, srcRank,
                                                     std::move(got), host[0],
                                                     uploadLater(t, host[0], tensors));
}

// What a staged receive does once gloo is done: t's copy back from host on the group's stream,
// and the device side's work (recording the source for recvAnysource). Captures by value: the
// work may be waited after the call that made it returned.
std::function<c10::intrusive_ptr<c10d::Work>(int)>
CrossHostComm::uploadLater(const at::Tensor& t, const at::Tensor& host,
                           const std::vector<at::Tensor>& tensors) {
    return [rank = rank_, device = device_, stream = stream_, t, host, kept = tensors](int source) {
        DeviceScope scope(device);
        if (t.nbytes() != 0) {
            MTIA_CHECK(mtiaMemcpyAsync(t.data_ptr(), host.data_ptr(), t.nbytes(),
                                       mtiaMemcpyHostToDevice, stream));
        }
        xhost::keepOnStream(kept, stream);
        return c10::make_intrusive<xhost::RecvWork>(
            rank, c10::Device(c10::DeviceType::MTIA, device), stream, kept, source);
    };
}

c10::intrusive_ptr<c10d::Work> CrossHostComm::recvAnysource(std::vector<at::Tensor>& tensors,
                                                            int tag) {
    const at::Tensor& t = xhost::one(tensors, "recv");
    checkTensor(t, "recv", "the tensor");
    DeviceScope scope(device_);
    joinCaller();
    std::vector<at::Tensor> host{xhost::pinnedBytes(t.nbytes())};
    c10::intrusive_ptr<c10d::Work> got = gloo_->recvAnysource(host, tag);
    return c10::make_intrusive<xhost::StagedP2PWork>(rank_, c10d::OpType::RECVANYSOURCE, -1,
                                                     std::move(got), host[0],
                                                     uploadLater(t, host[0], tensors));
}

}  // namespace torch_mtia::dist
