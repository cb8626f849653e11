// Stream capture: which streams are being captured, into which sequence, and
// the rules of CUDA's capture (modes, legality, fork and join by events,
// invalidation, the join check at the end). One process-wide registry under
// one mutex holds every live capture; a stream knows only that it is being
// captured (Stream::capture() points at the registry), so an enqueue on a
// stream outside any capture pays one atomic load.
//
// Lock order: the registry's mutex, then an event's lock or the allocator's.
#pragma once

#include "allocator/device_allocator.hpp"
#include "allocator/pool_id.hpp"
#include "graph/graph_ir.hpp"
#include "streams/capture_link.hpp"
#include "streams/event.hpp"
#include "streams/stream.hpp"

#include <mtia/mtia_graph.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace mtia::graph {

class Capture;

// The calling thread's capture interaction mode (Global for a new thread); returns the previous
// one.
mtiaStreamCaptureMode exchangeThreadCaptureMode(mtiaStreamCaptureMode mode) noexcept;

// Where allocations of the capture's streams go (graph capture routes them to a private pool).
struct PoolRoute {
    allocator::DeviceAllocator* memory = nullptr;  // null: no routing
    allocator::PoolId pool{};
};

// How a capture ended.
struct CaptureResult {
    mtiaError_t status = mtiaSuccess;
    std::string message;           // why it failed
    std::unique_ptr<Graph> graph;  // on success
};

class CaptureTable final : public streams::CaptureLink {
public:
    static CaptureTable& instance();
    // Whether any capture is live in the process: the ABI's synchronising calls check only then.
    static bool anyActive() noexcept { return active_.load(std::memory_order_acquire) != 0; }

    // Begins a capture with origin as its first stream. route's stream route for origin must
    // already exist; streams that join get routes to the same pool. fromStreamApi: began by
    // mtiaStreamBeginCapture (only mtiaStreamEndCapture may end it). Throws IllegalState (origin is
    // capturing), InvalidValue (mode).
    std::shared_ptr<Capture> begin(std::shared_ptr<streams::Stream> origin,
                                   mtiaStreamCaptureMode mode, PoolRoute route, bool fromStreamApi);
    // Ends capture: its streams stop capturing and their pool routes end, whatever the result
    // (checks in order: wrong thread, invalidated, unjoined). Never throws for capture errors: see
    // the result.
    CaptureResult end(Capture& capture);
    // Ends capture without a graph (graph reset or destroyed mid-capture).
    void abort(Capture& capture) noexcept;
    // mtiaStreamEndCapture: the capture stream began with mtiaStreamBeginCapture. Throws
    // IllegalState (not capturing, or begun through a graph object), StreamCaptureUnmatched (stream
    // only joined).
    std::shared_ptr<Capture> captureBegunOn(const streams::Stream& stream);

    // CaptureLink: work enqueued on a capturing stream becomes a node.
    void append(streams::Stream& stream, const streams::CapturedCommand& cmd) override;

    // mtiaEventRecord(WithFlags) on stream. Returns false when stream is not capturing (record
    // eagerly).
    bool recordEvent(const std::shared_ptr<streams::Event>& event, streams::Stream& stream,
                     bool external);
    // mtiaStreamWaitEvent while some capture is live: joins, merges, isolation, external waits.
    // Returns false when nothing capture-related applies (wait eagerly).
    bool waitEvent(streams::Stream& stream, const std::shared_ptr<streams::Event>& event,
                   unsigned flags);

    // Checks of the "potentially unsafe" calls. Each throws the documented error and invalidates
    // the captures concerned; each returns at once when no capture is live.
    void checkStreamSync(const streams::Stream& stream, const char* what);
    void checkEventSync(const streams::Event& event, const char* what);
    void checkDeviceSync(int device, const char* what);
    // device -1: the call concerns no device in particular.
    void checkUnsafe(int device, const char* what);
    // Replaying into a capturing stream: invalidates its capture and throws
    // StreamCaptureUnsupported.
    void refuseReplayInto(const streams::Stream& stream);

    // Whether a live capture captures on device (mtiaDeviceReset refuses then). Never invalidates.
    bool capturingOn(int device);

    // Capture status of stream and the capture's id (0 when None). Never invalidates.
    mtiaStreamCaptureStatus status(const streams::Stream& stream, uint64_t* id);

private:
    CaptureTable() = default;
    void finish(Capture& c) noexcept;  // with mu_ held
    void invalidate(Capture& c, std::string why);
    // Captures that make a potentially unsafe call of this thread illegal (see mtia_graph.h).
    std::vector<Capture*> prohibiting(int device);
    Capture* captureOf(const streams::Stream& stream);
    void join(Capture& c, streams::Stream& stream, const std::vector<NodeId>& frontier);

    static std::atomic<int> active_;
    std::mutex mu_;
    std::unordered_map<const streams::Stream*, std::shared_ptr<Capture>> streams_;
    std::vector<Capture*> live_;
};

// One capture sequence. Fields are guarded by the registry's mutex.
class Capture {
public:
    uint64_t id() const noexcept { return id_; }

private:
    friend class CaptureTable;
    struct Member {
        std::shared_ptr<streams::Stream> stream;
        std::vector<NodeId> frontier;  // the nodes its next work depends on
    };
    Member* member(const streams::Stream& s);

    uint64_t id_ = 0;
    int device_ = 0;
    mtiaStreamCaptureMode mode_ = mtiaStreamCaptureModeGlobal;
    std::thread::id owner_;
    bool fromStreamApi_ = false;
    bool live_ = true;
    bool invalidated_ = false;
    std::string why_;  // what invalidated it
    PoolRoute route_;
    std::vector<Member> members_;  // members_[0] is the origin
    std::unique_ptr<Graph> graph_;
};

// What an event recorded during a capture remembers: the capture and the stream's position in it.
struct EventMark final : streams::CaptureMark {
    std::weak_ptr<Capture> capture;
    std::vector<NodeId> frontier;
};

}  // namespace mtia::graph
