// An instantiated graph: the template's nodes laid out on lanes (device
// queues) and cut into segments, each segment a driver command list, with
// the waits between lanes and the event actions precomputed, so a replay is
// a short walk over a few steps. A straight-line graph is one segment on the
// replay stream: one submission per replay.
#pragma once

#include "graph/graph_ir.hpp"
#include "platform/driver/driver.hpp"
#include "streams/stream.hpp"

#include <cstdint>
#include <memory>
#include <vector>

namespace mtia::graph {

// The device a graph is instantiated for.
struct DeviceTarget {
    const driver::Driver* driver = nullptr;
    int device = 0;
    int32_t driverDevice = 0;
    int engines = 1;  // lanes beyond this would not run concurrently
};

class Executable {
public:
    // Validates graph for target and precomputes its replay. Throws Error (a node the driver
    // refuses, named by its index; out of queues).
    Executable(const Graph& graph, const DeviceTarget& target);
    ~Executable();  // replays in flight still complete (the driver keeps what they use)
    Executable(const Executable&) = delete;
    Executable& operator=(const Executable&) = delete;

    // Queues a replay on stream (a stream of the target device that is not capturing), after the
    // previous replay wherever it ran. Not thread-safe: the caller serialises calls on one
    // executable. Throws Error (sticky device fault).
    void launch(streams::Stream& stream);
    // Blocks until the last replay completed (errors of the device are swallowed: the work is
    // over).
    void waitIdle() const noexcept;
    // Makes the next launch follow the last replay of previous (re-instantiation).
    void inheritOrder(const Executable& previous);

    size_t lanes() const noexcept { return lanes_.size() + 1; }

private:
    enum class StepKind : uint8_t { Submit, RecordEvent, WaitEvent };
    struct WaitOn {
        uint32_t lane;  // 0: the replay stream
        uint32_t step;  // whose command number to wait for
    };
    struct Step {
        StepKind kind = StepKind::Submit;
        uint32_t lane = 0;
        std::vector<WaitOn> waits;
        uint32_t firstCmd = 0, numCmds = 0;  // into cmds_ (Submit)
        mtiaDrvCommandList list = nullptr;   // Submit, when the driver has command lists
        std::shared_ptr<streams::Event> event;
    };

    void build(const Graph& graph);
    void createLists();

    DeviceTarget target_;
    std::vector<Step> steps_;
    std::vector<mtiaDrvCommand> cmds_;  // device commands of all segments, in step order
    std::vector<std::vector<unsigned char>>
        argBytes_;                                  // kernels' argument values (per kernel command)
    std::vector<std::vector<void*>> argPtrs_;       // and the pointers commands carry to them
    std::vector<std::shared_ptr<void>> keepAlive_;  // kernels' modules
    std::vector<std::shared_ptr<streams::Stream>>
        lanes_;                                    // lanes 1.. (lane 0 is the replay stream)
    std::vector<uint64_t> seqs_;                   // per step, during a launch
    std::vector<uint64_t> laneLast_;               // per aux lane, during a launch
    std::shared_ptr<streams::Stream> lastStream_;  // where the last replay ended
    uint64_t lastSeq_ = 0;
};

}  // namespace mtia::graph
