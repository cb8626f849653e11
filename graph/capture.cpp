#include "graph/capture.hpp"

#include "core/error.hpp"
#include "core/log.hpp"

#include <algorithm>
#include <cstring>

namespace mtia::graph {
namespace {

thread_local mtiaStreamCaptureMode tlsMode = mtiaStreamCaptureModeGlobal;
std::atomic<uint64_t> gNextCaptureId{1};

const char* modeName(mtiaStreamCaptureMode m) {
    switch (m) {
    case mtiaStreamCaptureModeGlobal: return "global";
    case mtiaStreamCaptureModeThreadLocal: return "thread-local";
    case mtiaStreamCaptureModeRelaxed: return "relaxed";
    default: return "?";
    }
}

// Adds the nodes of from to into, keeping into free of duplicates.
void mergeFrontier(std::vector<NodeId>& into, const std::vector<NodeId>& from) {
    for (NodeId n : from)
        if (std::find(into.begin(), into.end(), n) == into.end()) into.push_back(n);
}

}  // namespace

std::atomic<int> CaptureTable::active_{0};

mtiaStreamCaptureMode exchangeThreadCaptureMode(mtiaStreamCaptureMode mode) noexcept {
    return std::exchange(tlsMode, mode);
}

CaptureTable& CaptureTable::instance() {
    static CaptureTable* registry =
        new CaptureTable();  // never destroyed: streams may point at it at exit
    return *registry;
}

Capture::Member* Capture::member(const streams::Stream& s) {
    for (Member& m : members_)
        if (m.stream.get() == &s) return &m;
    return nullptr;
}

Capture* CaptureTable::captureOf(const streams::Stream& stream) {
    auto it = streams_.find(&stream);
    return it == streams_.end() ? nullptr : it->second.get();
}

std::shared_ptr<Capture> CaptureTable::begin(std::shared_ptr<streams::Stream> origin,
                                             mtiaStreamCaptureMode mode, PoolRoute route,
                                             bool fromStreamApi) {
    auto c = std::make_shared<Capture>();
    c->id_ = gNextCaptureId.fetch_add(1, std::memory_order_relaxed);
    c->device_ = origin->device();
    c->mode_ = mode;
    c->owner_ = std::this_thread::get_id();
    c->fromStreamApi_ = fromStreamApi;
    c->route_ = route;
    c->graph_ = std::make_unique<Graph>(origin->device());
    c->members_.push_back({origin, {}});
    std::lock_guard lock(mu_);
    if (Capture* other = captureOf(*origin))
        fail(mtiaErrorIllegalState, "stream {} is already {} capture {}", origin->id(),
             other->members_[0].stream == origin ? "capturing, as the origin of" : "part of",
             other->id_);
    live_.reserve(live_.size() + 1);
    streams_.emplace(origin.get(), c);
    live_.push_back(c.get());
    origin->setCapture(this);
    active_.fetch_add(1, std::memory_order_release);
    return c;
}

void CaptureTable::finish(Capture& c) noexcept {
    if (!c.live_) return;
    c.live_ = false;
    for (Capture::Member& m : c.members_) {
        m.stream->setCapture(nullptr);
        streams_.erase(m.stream.get());
    }
    std::erase(live_, &c);
    if (c.route_.memory != nullptr) {
        try {
            c.route_.memory->endAllocateToPool(c.route_.pool);
        } catch (const Error& e) {
            log(LogLevel::Warn, "ending the pool routes of capture {}: {}", c.id_, e.what());
        }
    }
    active_.fetch_sub(1, std::memory_order_release);
}

void CaptureTable::abort(Capture& c) noexcept {
    std::lock_guard lock(mu_);
    finish(c);
}

CaptureResult CaptureTable::end(Capture& c) {
    std::lock_guard lock(mu_);
    CaptureResult r;
    if (!c.live_) {
        r.status = mtiaErrorIllegalState;
        r.message = fmt::format("capture {} has ended already", c.id_);
        return r;
    }
    if (c.mode_ != mtiaStreamCaptureModeRelaxed && c.owner_ != std::this_thread::get_id()) {
        r.status = mtiaErrorStreamCaptureWrongThread;
        r.message = fmt::format("capture {} ({} mode) was begun by another thread; only relaxed "
                                "captures may end on another thread. "
                                "The capture is ended without a graph",
                                c.id_, modeName(c.mode_));
    } else if (c.invalidated_) {
        r.status = mtiaErrorStreamCaptureInvalidated;
        r.message = fmt::format("capture {} was invalidated: {}", c.id_, c.why_);
    } else {
        // The join check works on frontiers: every joined stream's frontier must be in the origin's
        // final frontier or among its ancestors.
        const Graph& g = *c.graph_;
        std::vector<char> reach(g.nodeCount(), 0);
        std::vector<NodeId> work = c.members_[0].frontier;
        for (NodeId n : work) reach[n] = 1;
        while (!work.empty()) {
            const NodeId n = work.back();
            work.pop_back();
            for (NodeId d : g.nodes()[n].deps)
                if (!reach[d]) {
                    reach[d] = 1;
                    work.push_back(d);
                }
        }
        for (size_t i = 1; i < c.members_.size() && r.status == mtiaSuccess; ++i)
            for (NodeId n : c.members_[i].frontier)
                if (!reach[n]) {
                    r.status = mtiaErrorStreamCaptureUnjoined;
                    r.message = fmt::format(
                        "stream {} joined capture {} and its work (node #{}) was not joined back "
                        "into the origin stream {} "
                        "(record an event on it and make the origin wait for it)",
                        c.members_[i].stream->id(), c.id_, n, c.members_[0].stream->id());
                    break;
                }
    }
    if (r.status == mtiaSuccess) r.graph = std::move(c.graph_);
    finish(c);
    return r;
}

std::shared_ptr<Capture> CaptureTable::captureBegunOn(const streams::Stream& stream) {
    std::lock_guard lock(mu_);
    auto it = streams_.find(&stream);
    if (it == streams_.end())
        fail(mtiaErrorIllegalState, "stream {} is not capturing", stream.id());
    const std::shared_ptr<Capture>& c = it->second;
    if (c->members_[0].stream.get() != &stream)
        fail(
            mtiaErrorStreamCaptureUnmatched,
            "stream {} joined capture {} but did not begin it; end it on stream {}, where it began",
            stream.id(), c->id_, c->members_[0].stream->id());
    if (!c->fromStreamApi_)
        fail(mtiaErrorIllegalState,
             "capture {} on stream {} was begun with mtiaGraphCaptureBegin; end it with "
             "mtiaGraphCaptureEnd",
             c->id_, stream.id());
    return c;
}

void CaptureTable::invalidate(Capture& c, std::string why) {
    if (c.invalidated_) return;
    c.invalidated_ = true;
    c.why_ = std::move(why);
    log(LogLevel::Debug, "capture {} invalidated: {}", c.id_, c.why_);
}

void CaptureTable::append(streams::Stream& stream, const streams::CapturedCommand& in) {
    Node node;
    switch (in.cmd.type) {
    case mtiaDrvCmdKernel: {
        node.kind = NodeKind::Kernel;
        node.name = in.name != nullptr ? in.name : "";
        node.keepAlive = in.keepAlive;
        node.argOffsets.resize(in.numArgs);
        size_t bytes = 0;
        for (uint32_t i = 0; i < in.numArgs; ++i) {
            bytes = (bytes + 7) & ~size_t{7};  // 8-byte alignment for every argument
            node.argOffsets[i] = static_cast<uint32_t>(bytes);
            bytes += in.argSizes[i];
        }
        node.argBytes.resize(bytes);
        for (uint32_t i = 0; i < in.numArgs; ++i)
            std::memcpy(node.argBytes.data() + node.argOffsets[i], in.cmd.u.kernel.args[i],
                        in.argSizes[i]);
        break;
    }
    case mtiaDrvCmdCopy: node.kind = NodeKind::Copy; break;
    case mtiaDrvCmdFill: node.kind = NodeKind::Fill; break;
    case mtiaDrvCmdHostFunc: node.kind = NodeKind::HostFunc; break;
    default:
        fail(mtiaErrorStreamCaptureUnsupported, "this kind of device command cannot be captured");
    }
    node.cmd = in.cmd;
    if (node.kind == NodeKind::Kernel)
        node.cmd.u.kernel.args = nullptr;  // the values are in argBytes
    node.streamId = stream.id();
    std::unique_lock lock(mu_);
    Capture* c = captureOf(stream);
    if (c == nullptr) {
        // The capture ended between the caller's look and now: the work comes after the end, so it
        // runs.
        lock.unlock();
        stream.submitToDevice(in.cmd);
        return;
    }
    if (c->invalidated_)
        fail(mtiaErrorStreamCaptureInvalidated,
             "stream {} belongs to capture {}, which was invalidated: {}", stream.id(), c->id_,
             c->why_);
    Capture::Member* m = c->member(stream);
    node.deps = m->frontier;
    const NodeId id = c->graph_->add(std::move(node));
    m->frontier.assign(1, id);
}

bool CaptureTable::recordEvent(const std::shared_ptr<streams::Event>& eventRef,
                               streams::Stream& stream, bool external) {
    streams::Event& event = *eventRef;
    event.requireRecordable();  // an imported event is never recorded here, capturing or not
    std::lock_guard lock(mu_);
    auto it = streams_.find(&stream);
    if (it == streams_.end()) return false;
    Capture& c = *it->second;
    if (event.device() != stream.device())
        fail(mtiaErrorInvalidHandle, "stream belongs to device {} but the event to device {}",
             stream.device(), event.device());
    if (c.invalidated_)
        fail(mtiaErrorStreamCaptureInvalidated,
             "stream {} belongs to capture {}, which was invalidated: {}", stream.id(), c.id_,
             c.why_);
    Capture::Member* m = c.member(stream);
    if (external) {
        Node node;
        node.kind = NodeKind::EventRecord;
        node.event = eventRef;
        node.deps = m->frontier;
        node.streamId = stream.id();
        m->frontier.assign(1, c.graph_->add(std::move(node)));
    }
    auto mark = std::make_shared<EventMark>();
    mark->capture = it->second;
    mark->frontier = m->frontier;
    event.setCaptureMark(std::move(mark));
    return true;
}

void CaptureTable::join(Capture& c, streams::Stream& stream, const std::vector<NodeId>& frontier) {
    if (stream.device() != c.device_) {
        invalidate(c, fmt::format("stream {} of device {} waited for it; captures span one device",
                                  stream.id(), stream.device()));
        fail(mtiaErrorStreamCaptureUnsupported,
             "stream {} is on device {} but capture {} is on device {}", stream.id(),
             stream.device(), c.id_, c.device_);
    }
    c.members_.reserve(c.members_.size() + 1);
    if (c.route_.memory != nullptr) c.route_.memory->routeStreamToPool(c.route_.pool, stream);
    std::shared_ptr<Capture> owner = streams_.at(c.members_[0].stream.get());
    c.members_.push_back({stream.shared_from_this(), frontier});
    streams_.emplace(&stream, std::move(owner));
    stream.setCapture(this);
}

bool CaptureTable::waitEvent(streams::Stream& stream,
                             const std::shared_ptr<streams::Event>& eventRef, unsigned flags) {
    const streams::Event& event = *eventRef;
    std::shared_ptr<const streams::CaptureMark> anyMark = event.captureMark();
    auto mark = std::static_pointer_cast<const EventMark>(anyMark);
    std::lock_guard lock(mu_);
    std::shared_ptr<Capture> source = mark ? mark->capture.lock() : nullptr;
    if (source && !source->live_) source.reset();
    Capture* target = captureOf(stream);
    if (target != nullptr && target->invalidated_)
        fail(mtiaErrorStreamCaptureInvalidated,
             "stream {} belongs to capture {}, which was invalidated: {}", stream.id(), target->id_,
             target->why_);
    if (source) {
        if (target == nullptr) {
            if (source->invalidated_)
                fail(mtiaErrorStreamCaptureInvalidated,
                     "the event was recorded in capture {}, which was invalidated: {}", source->id_,
                     source->why_);
            join(*source, stream, mark->frontier);
            return true;
        }
        if (target != source.get()) {
            invalidate(*target, fmt::format("stream {} waited for an event of capture {}",
                                            stream.id(), source->id_));
            fail(mtiaErrorStreamCaptureMerge,
                 "stream {} is capturing in capture {} and the event was recorded in another "
                 "capture, {}; captures "
                 "cannot be merged (capture {} is invalidated)",
                 stream.id(), target->id_, source->id_, target->id_);
        }
        mergeFrontier(target->member(stream)->frontier, mark->frontier);
        return true;
    }
    if (target == nullptr) return false;  // an eager wait
    if (event.imported()) {
        // Its records are another process's and are never recorded here: a graph cannot wait for
        // them.
        invalidate(*target, fmt::format("stream {} waited for an event opened from an IPC handle",
                                        stream.id()));
        fail(mtiaErrorStreamCaptureUnsupported,
             "stream {} is capturing (capture {}) and the event was opened from an IPC handle; a "
             "graph cannot wait "
             "for another process's event (capture {} is invalidated)",
             stream.id(), target->id_, target->id_);
    }
    if (!event.recorded())
        return true;  // never recorded: waiting for it is a no-op, as outside capture
    if ((flags & mtiaEventWaitExternal) == 0) {
        invalidate(
            *target,
            fmt::format("stream {} waited for an event recorded outside the capture", stream.id()));
        fail(mtiaErrorStreamCaptureIsolation,
             "stream {} is capturing (capture {}) and the event was recorded outside any capture; "
             "pass "
             "mtiaEventWaitExternal to make the graph wait for it on every replay (capture {} is "
             "invalidated)",
             stream.id(), target->id_, target->id_);
    }
    Capture::Member* m = target->member(stream);
    Node node;
    node.kind = NodeKind::EventWait;
    node.deps = m->frontier;
    node.streamId = stream.id();
    node.event = eventRef;
    m->frontier.assign(1, target->graph_->add(std::move(node)));
    return true;
}

std::vector<Capture*> CaptureTable::prohibiting(int device) {
    std::vector<Capture*> found;
    const mtiaStreamCaptureMode mine = tlsMode;
    if (mine == mtiaStreamCaptureModeRelaxed) return found;
    const auto me = std::this_thread::get_id();
    for (Capture* c : live_) {
        if (c->invalidated_) continue;
        const bool own = c->owner_ == me;
        if (own && c->mode_ != mtiaStreamCaptureModeRelaxed)
            found.push_back(c);
        else if (!own && mine == mtiaStreamCaptureModeGlobal &&
                 c->mode_ == mtiaStreamCaptureModeGlobal && (device < 0 || c->device_ == device))
            found.push_back(c);
    }
    return found;
}

void CaptureTable::checkUnsafe(int device, const char* what) {
    if (!anyActive()) return;
    std::lock_guard lock(mu_);
    std::vector<Capture*> found = prohibiting(device);
    if (found.empty()) return;
    std::string ids;
    for (Capture* c : found) {
        invalidate(*c, fmt::format("{} was called during it", what));
        ids += fmt::format("{}{} ({} mode, stream {})", ids.empty() ? "" : ", ", c->id_,
                           modeName(c->mode_), c->members_[0].stream->id());
    }
    fail(mtiaErrorStreamCaptureUnsupported,
         "{} is not permitted while capture {} is live in this thread's capture mode ({}); the "
         "capture is invalidated. "
         "Threads that must call it during captures switch to relaxed or thread-local mode with "
         "mtiaThreadExchangeStreamCaptureMode",
         what, ids, modeName(tlsMode));
}

void CaptureTable::checkStreamSync(const streams::Stream& stream, const char* what) {
    if (stream.capturing()) {
        std::lock_guard lock(mu_);
        if (Capture* c = captureOf(stream)) {
            invalidate(*c, fmt::format("{} was called on its stream {}", what, stream.id()));
            fail(mtiaErrorStreamCaptureUnsupported,
                 "{} on stream {}, which is capturing (capture {}), is not permitted; the capture "
                 "is invalidated",
                 what, stream.id(), c->id_);
        }
    }
    checkUnsafe(stream.device(), what);
}

void CaptureTable::checkEventSync(const streams::Event& event, const char* what) {
    if (!anyActive()) return;
    auto mark = std::static_pointer_cast<const EventMark>(event.captureMark());
    if (mark) {
        std::lock_guard lock(mu_);
        std::shared_ptr<Capture> c = mark->capture.lock();
        if (c && c->live_) {
            invalidate(*c, fmt::format("{} was called on an event recorded in it", what));
            fail(mtiaErrorCapturedEvent,
                 "{} on an event recorded in live capture {} is not permitted (it has no eager "
                 "record to wait for); the "
                 "capture is invalidated",
                 what, c->id_);
        }
    }
    checkUnsafe(event.device(), what);
}

void CaptureTable::checkDeviceSync(int device, const char* what) {
    if (!anyActive()) return;
    {
        std::lock_guard lock(mu_);
        const auto me = std::this_thread::get_id();
        for (Capture* c : live_)
            if (c->owner_ == me && c->device_ == device && !c->invalidated_) {
                invalidate(*c, fmt::format("{} was called during it by its own thread", what));
                fail(mtiaErrorStreamCaptureUnsupported,
                     "{} on device {} is not permitted while this thread captures on it (capture "
                     "{}); the capture is "
                     "invalidated",
                     what, device, c->id_);
            }
    }
    checkUnsafe(device, what);
}

bool CaptureTable::capturingOn(int device) {
    if (!anyActive()) return false;
    std::lock_guard lock(mu_);
    for (const Capture* c : live_)
        if (c->device_ == device) return true;
    return false;
}

void CaptureTable::refuseReplayInto(const streams::Stream& stream) {
    std::lock_guard lock(mu_);
    Capture* c = captureOf(stream);
    if (c == nullptr) return;
    invalidate(*c, fmt::format("a graph was replayed into its stream {}", stream.id()));
    fail(mtiaErrorStreamCaptureUnsupported,
         "stream {} is capturing (capture {}); replaying a graph into a capture is not supported, "
         "and the capture is "
         "invalidated",
         stream.id(), c->id_);
}

mtiaStreamCaptureStatus CaptureTable::status(const streams::Stream& stream, uint64_t* id) {
    if (id != nullptr) *id = 0;
    if (!stream.capturing()) return mtiaStreamCaptureStatusNone;
    std::lock_guard lock(mu_);
    Capture* c = captureOf(stream);
    if (c == nullptr) return mtiaStreamCaptureStatusNone;
    if (id != nullptr) *id = c->id_;
    return c->invalidated_ ? mtiaStreamCaptureStatusInvalidated : mtiaStreamCaptureStatusActive;
}

}  // namespace mtia::graph
