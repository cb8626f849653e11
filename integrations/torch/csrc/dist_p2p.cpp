#include "dist_p2p.h"

#include "dist_peers.h"
#include "mtia_check.h"
#include "streams.h"

#include <algorithm>
#include <cstring>
#include <optional>

namespace torch_mtia::dist {

// A rank's host as the peers of a channel compare it (PeerRecord's host and machine).
struct P2PIdentity {
    char host[256];
    uint8_t machine[16];
};

namespace {

// How often a channel's thread looks again at the store while it waits for its peer: from 20 us
// doubling up to 2 ms (a store check costs some microseconds); and how long one look lasts before
// the thread looks for new work of its own (a receive matched meanwhile, an expired operation).
constexpr auto kP2PFirstPause = std::chrono::microseconds(20);
constexpr auto kP2PMaxPause = std::chrono::microseconds(2000);
constexpr auto kP2PSlice = std::chrono::milliseconds(20);

// What the sender of a pair publishes once: its staging buffer (two slots) and filled events.
struct P2PSenderSetup {
    P2PIdentity id;
    uint64_t slotBytes;
    mtiaIpcMemHandle_t staging;
    mtiaIpcEventHandle_t filled[2];
};

// What the receiver of a pair publishes once: its consumed events.
struct P2PReceiverSetup {
    P2PIdentity id;
    mtiaIpcEventHandle_t consumed[2];
};

struct P2PHeaderRecord {
    uint64_t msg;
    int64_t tag;
    uint64_t bytes;
};

// The receiver's request for message msg; accept 0: its receive holds recvBytes, not the
// message's byte count (both sides fail).
struct P2PRequestRecord {
    uint64_t msg;
    uint64_t recvBytes;
    uint32_t accept;
    uint32_t reserved;
};

template <class T>
std::vector<uint8_t> p2pBytes(const T& record) {
    const auto* p = reinterpret_cast<const uint8_t*>(&record);
    return {p, p + sizeof record};
}

template <class T>
T p2pRecord(const std::vector<uint8_t>& bytes, const std::string& key) {
    TORCH_CHECK(bytes.size() == sizeof(T), "torch_mtia.distributed: store key '", key, "' holds ",
                bytes.size(), " bytes, expected ", sizeof(T), " (another torch_mtia version?)");
    T record;
    std::memcpy(&record, bytes.data(), sizeof record);
    return record;
}

P2PIdentity p2pIdentity() {
    PeerRecord peer{};
    describeHost(peer);
    P2PIdentity id{};
    std::memcpy(id.host, peer.host, sizeof id.host);
    std::memcpy(id.machine, peer.machine, sizeof id.machine);
    return id;
}

void p2pCheckSameMachine(const P2PIdentity& self, P2PIdentity peer, int rank, int other) {
    peer.host[sizeof peer.host - 1] = '\0';
    TORCH_CHECK(std::strcmp(peer.host, self.host) == 0 &&
                    std::memcmp(peer.machine, self.machine, sizeof self.machine) == 0,
                "torch_mtia.distributed: rank ", other, " is on host '", peer.host, "', rank ",
                rank, " on host '", self.host,
                "' (or the two use different simulated machines): the same-host path of the mtia "
                "backend cannot reach it");
}

// The caller's current stream as of now, as an event the channel's stream will wait for.
mtiaEvent_t p2pJoin(c10::DeviceIndex device) {
    DeviceScope scope(device);
    mtiaEvent_t event = nullptr;
    MTIA_CHECK(mtiaEventCreateWithFlags(&event, mtiaEventDisableTiming));
    const mtiaError_t status = mtiaEventRecord(event, streamHandle(currentStream(device)));
    if (status != mtiaSuccess) mtiaEventDestroy(event);
    MTIA_CHECK(status);
    return event;
}

// The caching allocator must not reuse the tensor's memory before the channel's stream is done
// with it (as the collectives' recordOnStream).
void p2pKeepForStream(const at::Tensor& t, mtiaStream_t stream) {
    void* base = t.storage().mutable_data();
    if (base == nullptr) return;
    const mtiaError_t status = mtiaRecordStream(base, stream);
    if (status != mtiaErrorInvalidValue) MTIA_CHECK(status);
}

std::exception_ptr p2pError(const std::string& why) {
    try {
        TORCH_CHECK(false, why);
    } catch (...) {
        return std::current_exception();
    }
    return nullptr;
}

std::string p2pWhat(std::exception_ptr error) {
    try {
        std::rethrow_exception(error);
    } catch (const c10::Error& e) {
        return e.what_without_backtrace();
    } catch (const std::exception& e) {
        return e.what();
    } catch (...) {
        return "unknown error";
    }
}

}  // namespace

struct PointToPoint::Outbox {
    std::thread thread;
    std::condition_variable cv;
    uint64_t nextMsg = 0;
    std::map<uint64_t, Posted> pending;  // posted, not yet requested by the receiver
    std::string broken;                  // why the channel failed, once it did
    // Set up by the first send; then used by the thread only.
    P2PIdentity self{};
    mtiaStream_t stream = nullptr;
    char* staging = nullptr;
    mtiaEvent_t filled[2] = {}, consumed[2] = {};
    bool peerOpen = false;
    uint64_t nextRequest = 0, chunks = 0;
};

struct PointToPoint::Inbox {
    std::thread thread;
    std::condition_variable cv;
    std::deque<Header> unmatched;                   // headers read, no receive posted for them yet
    std::deque<std::pair<Posted, Header>> matched;  // to request and transfer, in this order
    std::string broken;
    P2PIdentity self{};
    mtiaStream_t stream = nullptr;
    char* staging = nullptr;  // the sender's, mapped here
    mtiaEvent_t filled[2] = {}, consumed[2] = {};
    bool peerOpen = false;
    uint64_t nextHeader = 0, nextRequest = 0, chunks = 0;
};

PointToPoint::PointToPoint(c10::intrusive_ptr<c10d::Store> store, int rank, int size,
                           std::chrono::milliseconds timeout)
    : store_(std::move(store)), rank_(rank), size_(size), timeout_(timeout),
      slotBytes_(stagingBytesFromEnv()), out_(size), in_(size) {}

PointToPoint::~PointToPoint() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_ = true;
        for (auto& box : out_)
            if (box) box->cv.notify_all();
        for (auto& box : in_)
            if (box) box->cv.notify_all();
    }
    for (auto& box : out_)
        if (box && box->thread.joinable()) box->thread.join();
    for (auto& box : in_)
        if (box && box->thread.joinable()) box->thread.join();
    const std::string why = "torch_mtia.distributed: the process group was destroyed before the "
                            "peer posted the matching operation";
    for (Posted& op : recvs_) fail(op, why);
    for (auto& box : out_) {
        if (!box) continue;
        for (auto& [id, op] : box->pending) fail(op, why);
    }
    for (auto& box : in_) {
        if (!box) continue;
        for (auto& [op, header] : box->matched) fail(op, why);
    }
    deliverFailures();
    if (device_ < 0) return;
    DeviceScope scope(device_);
    // Peers may still read this rank's staging buffers: the runtime defers their free until the
    // last importer closed them (mtia_ipc.h).
    for (auto& box : out_) {
        if (!box) continue;
        if (box->stream != nullptr) mtiaStreamSynchronize(box->stream);
        if (box->staging != nullptr) mtiaFree(box->staging);
        for (mtiaEvent_t e : {box->filled[0], box->filled[1], box->consumed[0], box->consumed[1]})
            if (e != nullptr) mtiaEventDestroy(e);
        if (box->stream != nullptr) mtiaStreamDestroy(box->stream);
    }
    for (auto& box : in_) {
        if (!box) continue;
        if (box->stream != nullptr) mtiaStreamSynchronize(box->stream);
        if (box->staging != nullptr) mtiaIpcCloseMemHandle(box->staging);
        for (mtiaEvent_t e : {box->filled[0], box->filled[1], box->consumed[0], box->consumed[1]})
            if (e != nullptr) mtiaEventDestroy(e);
        if (box->stream != nullptr) mtiaStreamDestroy(box->stream);
    }
}

std::string PointToPoint::key(int src, int dst, const char* what, uint64_t n) const {
    return "p2p/" + std::to_string(src) + "/" + std::to_string(dst) + "/" + what + "/" +
           std::to_string(n);
}

void PointToPoint::fail(Posted& op, const std::string& why) {
    if (op.joined != nullptr) {
        mtiaEventDestroy(op.joined);
        op.joined = nullptr;
    }
    if (op.work) {
        std::lock_guard<std::mutex> lock(failedMu_);
        failed_.emplace_back(std::move(op.work), p2pError(why));
    }
    op.work.reset();
}

bool PointToPoint::failuresPending() {
    std::lock_guard<std::mutex> lock(failedMu_);
    return !failed_.empty();
}

void PointToPoint::deliverFailures() {
    std::vector<std::pair<c10::intrusive_ptr<P2PWork>, std::exception_ptr>> failed;
    {
        std::lock_guard<std::mutex> lock(failedMu_);
        failed.swap(failed_);
    }
    for (auto& [work, error] : failed) work->failed(error);
}

void PointToPoint::checkTensor(const at::Tensor& t, const char* what) {
    TORCH_CHECK(t.device().type() == c10::DeviceType::MTIA, "torch_mtia.distributed: ", what,
                ": the tensor must be an mtia tensor, got one on ", t.device());
    TORCH_CHECK(t.is_contiguous() && !t.is_sparse(), "torch_mtia.distributed: ", what,
                ": the tensor must be dense and contiguous");
    if (device_ < 0) device_ = t.device().index();
    TORCH_CHECK(device_ == t.device().index(), "torch_mtia.distributed: ", what, ": rank ", rank_,
                " used mtia:", static_cast<int>(device_),
                " for point-to-point messages of this process group before and now mtia:",
                static_cast<int>(t.device().index()),
                ": the mtia backend supports one device per rank and group");
}

PointToPoint::Outbox& PointToPoint::outbox(int dst) {
    if (out_[dst]) return *out_[dst];
    auto box = std::make_unique<Outbox>();
    DeviceScope scope(device_);
    try {
        box->self = p2pIdentity();
        P2PSenderSetup setup{};
        setup.id = box->self;
        setup.slotBytes = slotBytes_;
        MTIA_CHECK(mtiaStreamCreateWithFlags(&box->stream, mtiaStreamNonBlocking));
        void* buffer = nullptr;
        MTIA_CHECK(mtiaMalloc(&buffer, 2 * slotBytes_));
        box->staging = static_cast<char*>(buffer);
        MTIA_CHECK(mtiaIpcGetMemHandle(&setup.staging, buffer));
        for (int p = 0; p < 2; ++p) {
            MTIA_CHECK(mtiaEventCreateWithFlags(&box->filled[p],
                                                mtiaEventInterprocess | mtiaEventDisableTiming));
            MTIA_CHECK(mtiaIpcGetEventHandle(&setup.filled[p], box->filled[p]));
        }
        store_->set(key(rank_, dst, "ss", 0), p2pBytes(setup));
    } catch (...) {
        if (box->staging != nullptr) mtiaFree(box->staging);
        for (mtiaEvent_t e : box->filled)
            if (e != nullptr) mtiaEventDestroy(e);
        if (box->stream != nullptr) mtiaStreamDestroy(box->stream);
        throw;
    }
    Outbox* raw = box.get();
    out_[dst] = std::move(box);
    // The thread takes mutex_ first, which the caller holds until the box is complete.
    raw->thread = std::thread([this, raw, dst] { runOutbox(*raw, dst); });
    return *raw;
}

PointToPoint::Inbox& PointToPoint::inbox(int src) {
    if (in_[src]) return *in_[src];
    auto box = std::make_unique<Inbox>();
    DeviceScope scope(device_);
    try {
        box->self = p2pIdentity();
        P2PReceiverSetup setup{};
        setup.id = box->self;
        MTIA_CHECK(mtiaStreamCreateWithFlags(&box->stream, mtiaStreamNonBlocking));
        for (int p = 0; p < 2; ++p) {
            MTIA_CHECK(mtiaEventCreateWithFlags(&box->consumed[p],
                                                mtiaEventInterprocess | mtiaEventDisableTiming));
            MTIA_CHECK(mtiaIpcGetEventHandle(&setup.consumed[p], box->consumed[p]));
        }
        store_->set(key(src, rank_, "rs", 0), p2pBytes(setup));
    } catch (...) {
        for (mtiaEvent_t e : box->consumed)
            if (e != nullptr) mtiaEventDestroy(e);
        if (box->stream != nullptr) mtiaStreamDestroy(box->stream);
        throw;
    }
    Inbox* raw = box.get();
    in_[src] = std::move(box);
    raw->thread = std::thread([this, raw, src] { runInbox(*raw, src); });
    return *raw;
}

c10::intrusive_ptr<P2PWork> PointToPoint::send(const at::Tensor& tensor, int dst, int tag) {
    TORCH_CHECK(dst >= 0 && dst < size_ && dst != rank_,
                "torch_mtia.distributed: send: "
                "destination rank ",
                dst, " must be another rank of the group of ", size_, " (this is rank ", rank_,
                ")");
    std::unique_lock<std::mutex> lock(mutex_);
    checkTensor(tensor, "send");
    auto work =
        c10::make_intrusive<P2PWork>(rank_, c10d::OpType::SEND, "mtia:send", tensor, dst, timeout_);
    Outbox& box = outbox(dst);
    TORCH_CHECK(box.broken.empty(), "torch_mtia.distributed: send to rank ", dst,
                ": the channel failed earlier: ", box.broken);
    Posted op{box.nextMsg, dst, tag, tensor, p2pJoin(device_), work, Clock::now() + timeout_};
    try {
        // Under the lock: the headers of the pair appear in posting order.
        store_->set(key(rank_, dst, "h", op.id),
                    p2pBytes(P2PHeaderRecord{op.id, tag, tensor.nbytes()}));
    } catch (...) {
        mtiaEventDestroy(op.joined);
        throw;
    }
    ++box.nextMsg;
    box.pending.emplace(op.id, std::move(op));
    box.cv.notify_all();
    return work;
}

c10::intrusive_ptr<P2PWork> PointToPoint::recv(const at::Tensor& tensor, int src, int tag) {
    TORCH_CHECK(src == -1 || (src >= 0 && src < size_ && src != rank_),
                "torch_mtia.distributed: recv: source rank ", src,
                " must be another rank of the group of ", size_, " (this is rank ", rank_, ")");
    std::unique_lock<std::mutex> lock(mutex_);
    checkTensor(tensor, "recv");
    auto work = c10::make_intrusive<P2PWork>(
        rank_, src < 0 ? c10d::OpType::RECVANYSOURCE : c10d::OpType::RECV,
        src < 0 ? "mtia:recv_any_source" : "mtia:recv", tensor, src, timeout_);
    for (int s = 0; s < size_; ++s) {
        if (s == rank_ || (src >= 0 && s != src)) continue;
        Inbox& box = inbox(s);
        TORCH_CHECK(src < 0 || box.broken.empty(), "torch_mtia.distributed: recv from rank ", s,
                    ": the channel failed earlier: ", box.broken);
    }
    Posted op{recvSeq_++, src, tag, tensor, p2pJoin(device_), work, Clock::now() + timeout_};
    // A header read earlier that no receive took yet: the first of the lowest source rank.
    for (int s = 0; s < size_; ++s) {
        if (s == rank_ || (src >= 0 && s != src) || !in_[s]->broken.empty()) continue;
        Inbox& box = *in_[s];
        auto it = std::find_if(box.unmatched.begin(), box.unmatched.end(),
                               [&](const Header& h) { return h.tag == tag; });
        if (it == box.unmatched.end()) continue;
        box.matched.emplace_back(std::move(op), *it);
        box.unmatched.erase(it);
        box.cv.notify_all();
        return work;
    }
    recvs_.push_back(std::move(op));
    for (int s = 0; s < size_; ++s)
        if (s != rank_ && (src < 0 || s == src)) in_[s]->cv.notify_all();
    return work;
}

bool PointToPoint::matchHeader(Inbox& box, int src, const Header& header) {
    auto it = std::find_if(recvs_.begin(), recvs_.end(), [&](const Posted& op) {
        return (op.peer == src || op.peer == -1) && op.tag == header.tag;
    });
    if (it == recvs_.end()) return false;
    box.matched.emplace_back(std::move(*it), header);
    recvs_.erase(it);
    return true;
}

auto PointToPoint::awaitKey(const std::string& k, Clock::time_point deadline) -> Await {
    auto pause = std::chrono::duration_cast<std::chrono::microseconds>(kP2PFirstPause);
    for (;;) {
        if (store_->check({k})) return Await::Present;
        if (stop_.load()) return Await::Stopped;
        if (Clock::now() >= deadline) return Await::Expired;
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::microseconds(kP2PMaxPause));
    }
}

void PointToPoint::needKey(const std::string& k, int peer, const char* what) {
    const Await got = awaitKey(k, Clock::now() + timeout_);
    TORCH_CHECK(got != Await::Stopped,
                "torch_mtia.distributed: the process group was destroyed "
                "while rank ",
                rank_, " waited for rank ", peer, " to ", what);
    TORCH_CHECK(got == Await::Present, "torch_mtia.distributed: rank ", peer, " did not ", what,
                " within ", timeout_.count(), " ms (rank ", rank_, " waited for store key '", k,
                "')");
}

void PointToPoint::openOutbox(Outbox& box, int dst) {
    const std::string k = key(rank_, dst, "rs", 0);
    needKey(k, dst, "set up its side of the channel");
    const auto setup = p2pRecord<P2PReceiverSetup>(store_->get(k), k);
    p2pCheckSameMachine(box.self, setup.id, rank_, dst);
    for (int p = 0; p < 2; ++p)
        MTIA_CHECK(mtiaIpcOpenEventHandle(&box.consumed[p], setup.consumed[p]));
    box.peerOpen = true;
}

void PointToPoint::openInbox(Inbox& box, int src) {
    const std::string k = key(src, rank_, "ss", 0);
    needKey(k, src, "set up its side of the channel");
    const auto setup = p2pRecord<P2PSenderSetup>(store_->get(k), k);
    p2pCheckSameMachine(box.self, setup.id, rank_, src);
    TORCH_CHECK(setup.slotBytes == slotBytes_, "torch_mtia.distributed: rank ", src, " stages ",
                setup.slotBytes, " bytes per slot, rank ", rank_, " ", slotBytes_,
                ": set MTIA_DIST_STAGING_BYTES alike in every process");
    void* mapped = nullptr;
    MTIA_CHECK(mtiaIpcOpenMemHandle(&mapped, setup.staging, mtiaIpcMemLazyEnablePeerAccess));
    box.staging = static_cast<char*>(mapped);
    for (int p = 0; p < 2; ++p) MTIA_CHECK(mtiaIpcOpenEventHandle(&box.filled[p], setup.filled[p]));
    box.peerOpen = true;
}

void PointToPoint::transferOut(Outbox& box, Posted& op) {
    if (!box.peerOpen) openOutbox(box, op.peer);
    mtiaStream_t stream = box.stream;
    MTIA_CHECK(mtiaStreamWaitEvent(stream, op.joined, 0));
    const char* data = static_cast<const char*>(op.tensor.data_ptr());
    const size_t total = op.tensor.nbytes();
    for (size_t off = 0; off < total; off += slotBytes_) {
        const size_t len = std::min(slotBytes_, total - off);
        const int slot = static_cast<int>(box.chunks & 1);
        if (box.chunks >= 2) {
            const std::string k = key(rank_, op.peer, "c", box.chunks - 2);
            needKey(k, op.peer, "consume a chunk of a message");
            store_->deleteKey(k);
            MTIA_CHECK(mtiaStreamWaitEvent(stream, box.consumed[slot], 0));
        }
        MTIA_CHECK(mtiaMemcpyAsync(box.staging + slot * slotBytes_, data + off, len,
                                   mtiaMemcpyDefault, stream));
        MTIA_CHECK(mtiaEventRecord(box.filled[slot], stream));
        store_->set(key(rank_, op.peer, "f", box.chunks), std::vector<uint8_t>{1});
        ++box.chunks;
    }
    p2pKeepForStream(op.tensor, stream);
    mtiaEventDestroy(op.joined);
    op.joined = nullptr;
    op.work->posted(stream, rank_);
}

void PointToPoint::transferIn(Inbox& box, int src, Posted& op, const Header& header) {
    if (!box.peerOpen) openInbox(box, src);
    const size_t total = op.tensor.nbytes();
    const bool accept = header.bytes == total;
    store_->set(key(src, rank_, "r", box.nextRequest),
                p2pBytes(P2PRequestRecord{header.msg, total, accept ? 1u : 0u, 0}));
    ++box.nextRequest;
    if (!accept) {
        fail(op, "torch_mtia.distributed: rank " + std::to_string(src) + " sent " +
                     std::to_string(header.bytes) + " bytes with tag " +
                     std::to_string(header.tag) + ", the receive of rank " + std::to_string(rank_) +
                     " holds " + std::to_string(total));
        return;
    }
    mtiaStream_t stream = box.stream;
    MTIA_CHECK(mtiaStreamWaitEvent(stream, op.joined, 0));
    char* data = static_cast<char*>(op.tensor.data_ptr());
    for (size_t off = 0; off < total; off += slotBytes_) {
        const size_t len = std::min(slotBytes_, total - off);
        const int slot = static_cast<int>(box.chunks & 1);
        const std::string k = key(src, rank_, "f", box.chunks);
        needKey(k, src, "fill a chunk of a message");
        store_->deleteKey(k);
        MTIA_CHECK(mtiaStreamWaitEvent(stream, box.filled[slot], 0));
        MTIA_CHECK(mtiaMemcpyAsync(data + off, box.staging + slot * slotBytes_, len,
                                   mtiaMemcpyDefault, stream));
        MTIA_CHECK(mtiaEventRecord(box.consumed[slot], stream));
        store_->set(key(src, rank_, "c", box.chunks), std::vector<uint8_t>{1});
        ++box.chunks;
    }
    p2pKeepForStream(op.tensor, stream);
    mtiaEventDestroy(op.joined);
    op.joined = nullptr;
    op.work->posted(stream, src);
}

// The sender's side of the pair (this rank, dst): serves the receiver's requests in their order.
void PointToPoint::runOutbox(Outbox& box, int dst) {
    DeviceScope scope(device_);
    std::unique_lock<std::mutex> lock(mutex_);
    try {
        while (!stop_) {
            if (failuresPending()) {
                // Re-checks the state after: it may have changed while unlocked.
                lock.unlock();
                deliverFailures();
                lock.lock();
                continue;
            }
            const Clock::time_point now = Clock::now();
            Clock::time_point deadline = Clock::time_point::max();
            for (auto it = box.pending.begin(); it != box.pending.end();) {
                if (now < it->second.deadline) {
                    deadline = std::min(deadline, it->second.deadline);
                    ++it;
                    continue;
                }
                fail(it->second, "torch_mtia.distributed: rank " + std::to_string(dst) +
                                     " did not receive the message of rank " +
                                     std::to_string(rank_) + " with tag " +
                                     std::to_string(it->second.tag) + " within " +
                                     std::to_string(timeout_.count()) + " ms");
                it = box.pending.erase(it);
            }
            if (box.pending.empty()) {
                if (!failuresPending()) box.cv.wait(lock);
                continue;
            }
            lock.unlock();
            const std::string k = key(rank_, dst, "r", box.nextRequest);
            const Await got = awaitKey(k, std::min(deadline, Clock::now() + kP2PSlice));
            std::optional<P2PRequestRecord> request;
            if (got == Await::Present) {
                request = p2pRecord<P2PRequestRecord>(store_->get(k), k);
                store_->deleteKey(k);
                ++box.nextRequest;
            }
            lock.lock();
            if (!request) continue;
            auto it = box.pending.find(request->msg);
            TORCH_CHECK(it != box.pending.end(), "torch_mtia.distributed: rank ", dst,
                        " asked for message ", request->msg, " of rank ", rank_,
                        ", which failed earlier (it timed out)");
            Posted op = std::move(it->second);
            box.pending.erase(it);
            lock.unlock();
            if (request->accept == 0) {
                fail(op, "torch_mtia.distributed: rank " + std::to_string(rank_) + " sent " +
                             std::to_string(op.tensor.nbytes()) + " bytes with tag " +
                             std::to_string(op.tag) + ", the receive of rank " +
                             std::to_string(dst) + " holds " + std::to_string(request->recvBytes));
            } else {
                try {
                    transferOut(box, op);
                } catch (...) {
                    const std::exception_ptr error = std::current_exception();
                    fail(op, p2pWhat(error));
                    lock.lock();
                    throw;
                }
            }
            lock.lock();
        }
    } catch (...) {
        // The channel is out of step with its peer: this and every later send to dst fail.
        if (!lock.owns_lock()) lock.lock();
        box.broken = p2pWhat(std::current_exception());
        for (auto& [id, op] : box.pending) fail(op, box.broken);
        box.pending.clear();
    }
    if (lock.owns_lock()) lock.unlock();
    deliverFailures();
}

// The receiver's side of the pair (src, this rank): reads src's headers while a receive may take
// them, requests and transfers the matched messages in matching order.
void PointToPoint::runInbox(Inbox& box, int src) {
    DeviceScope scope(device_);
    std::unique_lock<std::mutex> lock(mutex_);
    try {
        while (!stop_) {
            if (failuresPending()) {
                // Re-checks the state after: it may have changed while unlocked.
                lock.unlock();
                deliverFailures();
                lock.lock();
                continue;
            }
            if (!box.matched.empty()) {
                auto [op, header] = std::move(box.matched.front());
                box.matched.pop_front();
                lock.unlock();
                try {
                    transferIn(box, src, op, header);
                } catch (...) {
                    fail(op, p2pWhat(std::current_exception()));
                    lock.lock();
                    throw;
                }
                lock.lock();
                continue;
            }
            const Clock::time_point now = Clock::now();
            Clock::time_point deadline = Clock::time_point::max();
            for (auto it = recvs_.begin(); it != recvs_.end();) {
                if (it->peer != src && it->peer != -1) {
                    ++it;
                    continue;
                }
                if (now < it->deadline) {
                    deadline = std::min(deadline, it->deadline);
                    ++it;
                    continue;
                }
                fail(*it, "torch_mtia.distributed: no message with tag " + std::to_string(it->tag) +
                              " from " +
                              (it->peer < 0 ? std::string("any rank")
                                            : "rank " + std::to_string(it->peer)) +
                              " reached rank " + std::to_string(rank_) + " within " +
                              std::to_string(timeout_.count()) + " ms");
                it = recvs_.erase(it);
            }
            if (deadline == Clock::time_point::max()) {
                if (!failuresPending()) box.cv.wait(lock);
                continue;
            }
            lock.unlock();
            const std::string k = key(src, rank_, "h", box.nextHeader);
            const Await got = awaitKey(k, std::min(deadline, Clock::now() + kP2PSlice));
            std::optional<P2PHeaderRecord> record;
            if (got == Await::Present) {
                record = p2pRecord<P2PHeaderRecord>(store_->get(k), k);
                store_->deleteKey(k);
                ++box.nextHeader;
            }
            lock.lock();
            if (!record) continue;
            const Header header{record->msg, record->tag, record->bytes};
            if (!matchHeader(box, src, header)) box.unmatched.push_back(header);
        }
    } catch (...) {
        if (!lock.owns_lock()) lock.lock();
        box.broken = p2pWhat(std::current_exception());
        for (auto& [op, header] : box.matched) fail(op, box.broken);
        box.matched.clear();
        for (auto it = recvs_.begin(); it != recvs_.end();) {
            if (it->peer == src) {
                fail(*it, box.broken);
                it = recvs_.erase(it);
            } else {
                ++it;
            }
        }
    }
    if (lock.owns_lock()) lock.unlock();
    deliverFailures();
}

}  // namespace torch_mtia::dist
