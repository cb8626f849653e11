// The graph object behind mtiaGraph_t: PyTorch's MTIAGraph one to one.
// States: Empty -> Capturing -> Captured (template kept) / Ready (instantiated)
// or Failed; reset returns to Empty from anywhere. The object owns one use of
// its private pool from capture begin until reset or destroy, so the pool's
// memory stays reserved while the graph can replay.
#pragma once

#include "allocator/device_allocator.hpp"
#include "allocator/pool_id.hpp"
#include "graph/capture.hpp"
#include "graph/executable.hpp"
#include "graph/graph_ir.hpp"

#include <mtia/mtia_graph.h>

#include <atomic>
#include <memory>
#include <mutex>

namespace mtia::graph {

// What a graph object needs of the device it captures on.
struct DeviceContext {
    DeviceTarget target;
    allocator::DeviceAllocator* memory = nullptr;
};

class GraphObject {
public:
    // flags: mtiaGraphKeepGraph or 0, already validated.
    explicit GraphObject(unsigned flags);
    ~GraphObject();  // resets
    GraphObject(const GraphObject&) = delete;
    GraphObject& operator=(const GraphObject&) = delete;

    // Each method is thread-safe (one lock per object) and throws Error as documented in
    // mtia_graph.h. pool {0,0}: a new private pool. fromStreamApi: mtiaStreamBeginCapture.
    void captureBegin(const DeviceContext& device, std::shared_ptr<streams::Stream> stream,
                      allocator::PoolId pool, mtiaStreamCaptureMode mode,
                      bool fromStreamApi = false);
    void captureEnd();
    // mtiaStreamEndCapture: the capture that stream began, which must be this object's.
    void instantiate();
    void replay(streams::Stream& stream);
    // Blocks until a replay in flight completed. Never throws.
    void reset() noexcept;
    allocator::PoolId pool() const;
    void debugDump(const char* path) const;
    void info(mtiaGraphInfo& out) const;
    int device() const;
    // The live capture, while capturing.
    std::shared_ptr<Capture> capture() const;
    uint64_t serial() const noexcept { return serial_; }

private:
    void resetLocked() noexcept;
    void instantiateLocked();
    const Graph* graphLocked() const;

    const bool keepGraph_;
    const uint64_t serial_;  // for the leak report
    mutable std::mutex mu_;
    mtiaGraphState state_ = mtiaGraphStateEmpty;
    DeviceContext device_{};
    bool ownsPool_ = false;
    allocator::PoolId pool_{};
    uint64_t captureId_ = 0;
    std::shared_ptr<Capture> capture_;
    std::unique_ptr<Graph> template_;
    std::unique_ptr<Graph>
        shape_;  // the instantiated graph's nodes when the template was dropped (dumps, info)
    std::unique_ptr<Executable> exec_;
    uint64_t replays_ = 0;
};

// Graph objects alive now, reported at process exit if any were never destroyed.
void trackGraph(GraphObject* g);
void untrackGraph(GraphObject* g) noexcept;

}  // namespace mtia::graph
