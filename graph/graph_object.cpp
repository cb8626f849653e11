#include "graph/graph_object.hpp"

#include "core/error.hpp"
#include "core/log.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

namespace mtia::graph {
namespace {

std::atomic<uint64_t> gNextSerial{1};
// Private pools of graphs are {n, 0}; mtiaGraphPoolHandle gives {0, n} (PyTorch's convention).
std::atomic<uint64_t> gNextGraphPool{1};

const char* stateName(mtiaGraphState s) {
    switch (s) {
    case mtiaGraphStateEmpty: return "empty";
    case mtiaGraphStateCapturing: return "capturing";
    case mtiaGraphStateCaptured: return "captured";
    case mtiaGraphStateReady: return "instantiated";
    case mtiaGraphStateFailed: return "failed capture";
    }
    return "?";
}

// The leak report: graph objects created and never destroyed, listed when the process exits. The
// list lives for the whole process (never destroyed), so a graph destroyed late in exit still finds
// it.
struct LiveGraphs {
    std::mutex mu;
    std::set<GraphObject*> graphs;
};

void reportLeaks() noexcept;

LiveGraphs& liveGraphs() {
    static LiveGraphs* live = [] {
        auto* l = new LiveGraphs();
        std::atexit(reportLeaks);
        return l;
    }();
    return *live;
}

void reportLeaks() noexcept {
    LiveGraphs& live = liveGraphs();
    std::lock_guard lock(live.mu);
    if (live.graphs.empty()) return;
    try {
        std::string list;
        for (GraphObject* g : live.graphs)
            list += fmt::format("{}#{}", list.empty() ? "" : ", ", g->serial());
        log(LogLevel::Warn,
            "{} graph object(s) never destroyed (mtiaGraphDestroy) at process exit: graph {}; "
            "their private pools stay "
            "reserved until the process ends",
            live.graphs.size(), list);
    } catch (...) {}
    // The objects are left alone: replays of theirs may still be running on device threads.
}

}  // namespace

void trackGraph(GraphObject* g) {
    LiveGraphs& live = liveGraphs();
    std::lock_guard lock(live.mu);
    live.graphs.insert(g);
}

void untrackGraph(GraphObject* g) noexcept {
    LiveGraphs& live = liveGraphs();
    std::lock_guard lock(live.mu);
    live.graphs.erase(g);
}

GraphObject::GraphObject(unsigned flags)
    : keepGraph_((flags & mtiaGraphKeepGraph) != 0),
      serial_(gNextSerial.fetch_add(1, std::memory_order_relaxed)) {}

GraphObject::~GraphObject() {
    reset();
}

void GraphObject::captureBegin(const DeviceContext& device, std::shared_ptr<streams::Stream> stream,
                               allocator::PoolId pool, mtiaStreamCaptureMode mode,
                               bool fromStreamApi) {
    std::lock_guard lock(mu_);
    if (state_ == mtiaGraphStateCapturing)
        fail(mtiaErrorIllegalState, "graph #{} is capturing already (capture {})", serial_,
             captureId_);
    if (state_ == mtiaGraphStateCaptured || state_ == mtiaGraphStateReady)
        fail(mtiaErrorIllegalState,
             "graph #{} already holds a captured graph; call mtiaGraphReset before capturing "
             "again, or create a new "
             "graph",
             serial_);
    if (pool.first != 0 && pool.second != 0)
        fail(mtiaErrorInvalidValue,
             "pool {{{}, {}}} has both halves set; pass {{0, 0}} (new private pool), an id from "
             "mtiaGraphPoolHandle "
             "{{0, n}} or from mtiaGraphGetPool {{n, 0}}",
             pool.first, pool.second);
    if (stream->capturing())
        fail(mtiaErrorIllegalState, "stream {} is already capturing or joined to a capture",
             stream->id());
    allocator::DeviceAllocator& memory = *device.memory;
    if (pool.first != 0 && !memory.poolInUse(pool))
        fail(mtiaErrorInvalidValue,
             "pool {{{}, {}}} is no longer in use on device {}: the graphs that used it were reset "
             "or destroyed and its "
             "memory was released; share a pool only while one of its graphs lives",
             pool.first, pool.second, device.target.device);
    if (state_ == mtiaGraphStateFailed) resetLocked();  // a failed capture's pool goes first
    const allocator::PoolId id =
        pool == allocator::PoolId{}
            ? allocator::PoolId{gNextGraphPool.fetch_add(1, std::memory_order_relaxed), 0}
            : pool;
    // Routing before the capture begins (PyTorch's order): an allocation racing with the begin
    // lands in the pool.
    memory.beginAllocateToPool(id, stream.get());
    try {
        capture_ =
            CaptureTable::instance().begin(stream, mode, PoolRoute{&memory, id}, fromStreamApi);
    } catch (...) {
        try {
            memory.endAllocateToPool(id);
            memory.releasePool(id);
        } catch (...) {}
        throw;
    }
    device_ = device;
    pool_ = id;
    ownsPool_ = true;
    captureId_ = capture_->id();
    state_ = mtiaGraphStateCapturing;
}

void GraphObject::captureEnd() {
    std::lock_guard lock(mu_);
    if (state_ != mtiaGraphStateCapturing)
        fail(mtiaErrorIllegalState,
             "graph #{} is not capturing ({}); call mtiaGraphCaptureBegin first", serial_,
             stateName(state_));
    CaptureResult r = CaptureTable::instance().end(*capture_);
    capture_.reset();
    if (r.status != mtiaSuccess) {
        state_ = mtiaGraphStateFailed;
        throw Error(r.status, std::move(r.message));
    }
    if (r.graph->nodeCount() == 0)
        log(LogLevel::Warn,
            "graph #{} captured no work (capture {}): the work was probably enqueued on another "
            "stream or device",
            serial_, captureId_);
    template_ = std::move(r.graph);
    state_ = mtiaGraphStateCaptured;
    if (!keepGraph_) {
        try {
            instantiateLocked();
        } catch (...) {
            state_ = mtiaGraphStateFailed;
            throw;
        }
    }
}

void GraphObject::instantiateLocked() {
    if (!template_)
        fail(mtiaErrorIllegalState,
             "graph #{} was instantiated at capture end and its captured graph dropped; create it "
             "with "
             "mtiaGraphKeepGraph to instantiate again",
             serial_);
    auto exec = std::make_unique<Executable>(*template_, device_.target);
    if (exec_) exec->inheritOrder(*exec_);  // replays of the old executable still come first
    exec_ = std::move(exec);
    if (!keepGraph_) shape_ = std::move(template_);
    state_ = mtiaGraphStateReady;
}

void GraphObject::instantiate() {
    std::lock_guard lock(mu_);
    if (state_ != mtiaGraphStateCaptured && state_ != mtiaGraphStateReady)
        fail(mtiaErrorIllegalState, "graph #{} has no successfully captured graph ({})", serial_,
             stateName(state_));
    instantiateLocked();
}

void GraphObject::replay(streams::Stream& stream) {
    std::lock_guard lock(mu_);
    if (state_ != mtiaGraphStateCaptured && state_ != mtiaGraphStateReady)
        fail(mtiaErrorIllegalState, "graph #{} has no successfully captured graph to replay ({})",
             serial_, stateName(state_));
    if (stream.device() != device_.target.device)
        fail(mtiaErrorInvalidValue,
             "stream {} is on device {} but graph #{} was captured on device {}", stream.id(),
             stream.device(), serial_, device_.target.device);
    if (stream.capturing()) CaptureTable::instance().refuseReplayInto(stream);
    if (state_ == mtiaGraphStateCaptured) instantiateLocked();
    exec_->launch(stream);
    ++replays_;
}

void GraphObject::resetLocked() noexcept {
    if (capture_) {
        CaptureTable::instance().abort(*capture_);
        capture_.reset();
    }
    if (exec_) exec_->waitIdle();  // the pool's memory must not go back while a replay uses it
    exec_.reset();
    template_.reset();
    shape_.reset();
    if (ownsPool_) {
        ownsPool_ = false;
        try {
            device_.memory->releasePool(pool_);
        } catch (const Error& e) {
            log(LogLevel::Warn, "graph #{}: releasing pool {{{}, {}}}: {}", serial_, pool_.first,
                pool_.second, e.what());
        }
    }
    pool_ = {};
    state_ = mtiaGraphStateEmpty;
}

void GraphObject::reset() noexcept {
    std::lock_guard lock(mu_);
    resetLocked();
}

allocator::PoolId GraphObject::pool() const {
    std::lock_guard lock(mu_);
    if (state_ != mtiaGraphStateCaptured && state_ != mtiaGraphStateReady)
        fail(mtiaErrorIllegalState,
             "graph #{} has no successfully captured graph, so no pool to share ({})", serial_,
             stateName(state_));
    return pool_;
}

const Graph* GraphObject::graphLocked() const {
    return template_ ? template_.get() : shape_.get();
}

void GraphObject::debugDump(const char* path) const {
    std::string dot;
    {
        std::lock_guard lock(mu_);
        const Graph* g = graphLocked();
        if (g == nullptr)
            fail(mtiaErrorIllegalState, "graph #{} holds no captured graph to dump ({})", serial_,
                 stateName(state_));
        dot = g->toDot(fmt::format("graph #{} capture {}", serial_, captureId_));
    }
    std::FILE* f = std::fopen(path, "w");
    if (f == nullptr)
        fail(mtiaErrorInvalidValue, "dotPath '{}' cannot be written: {}", path,
             std::strerror(errno));
    const bool ok = std::fwrite(dot.data(), 1, dot.size(), f) == dot.size();
    const bool closed = std::fclose(f) == 0;
    if (!ok || !closed)
        fail(mtiaErrorInvalidValue, "dotPath '{}': writing failed: {}", path, std::strerror(errno));
}

void GraphObject::info(mtiaGraphInfo& out) const {
    std::lock_guard lock(mu_);
    out.state = state_;
    const Graph* g = graphLocked();
    out.numNodes = g != nullptr ? g->nodeCount() : 0;
    out.numEdges = g != nullptr ? g->edgeCount() : 0;
    out.captureId = captureId_;
    out.device = state_ == mtiaGraphStateEmpty ? -1 : device_.target.device;
    out.hasTemplate = template_ ? 1 : 0;
    out.instantiated = exec_ ? 1 : 0;
    out.numLanes = exec_ ? static_cast<uint32_t>(exec_->lanes()) : 0;
    out.numReplays = replays_;
    out.pool = mtiaMemPoolId_t{pool_.first, pool_.second};
}

int GraphObject::device() const {
    std::lock_guard lock(mu_);
    return device_.target.device;
}

std::shared_ptr<Capture> GraphObject::capture() const {
    std::lock_guard lock(mu_);
    return capture_;
}

}  // namespace mtia::graph
