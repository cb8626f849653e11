// The graph template: the nodes a capture recorded and their dependency
// edges. Nodes are stored in the order they were captured, and a node
// depends only on earlier nodes, so that order is a topological order.
#pragma once

#include "streams/event.hpp"

#include <mtia/mtia_driver.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mtia::graph {

using NodeId = uint32_t;

enum class NodeKind : uint8_t {
    Kernel,       // a launch; arguments copied at capture
    Copy,         // memcpy
    Fill,         // memset
    HostFunc,     // host function
    EventRecord,  // external event record (mtiaEventRecordExternal)
    EventWait,    // external event wait (mtiaEventWaitExternal)
};

const char* nodeKindName(NodeKind kind) noexcept;

struct Node {
    NodeKind kind = NodeKind::Kernel;
    // Device work: the command as captured. For kernels cmd.u.kernel.args is not used: see
    // argBytes.
    mtiaDrvCommand cmd{};
    // Kernels: argument values packed one after the other, argument i at argOffsets[i].
    std::vector<unsigned char> argBytes;
    std::vector<uint32_t> argOffsets;
    std::string name;                       // kernel name (dumps)
    std::shared_ptr<void> keepAlive;        // the kernel's module, while the graph refers to it
    std::shared_ptr<streams::Event> event;  // EventRecord / EventWait
    std::vector<NodeId> deps;               // earlier nodes this one waits for (no duplicates)
    int64_t streamId = 0;                   // the captured stream it came from (dumps)
};

class Graph {
public:
    explicit Graph(int device) : device_(device) {}

    int device() const noexcept { return device_; }
    // Appends node, whose deps must name earlier nodes (checked). Returns its id. Throws bad_alloc.
    NodeId add(Node node);
    const std::vector<Node>& nodes() const noexcept { return nodes_; }
    size_t nodeCount() const noexcept { return nodes_.size(); }
    size_t edgeCount() const noexcept { return edges_; }
    // Graphviz DOT: nodes n<id> labelled with kind and parameters, edges n<dep> -> n<id>.
    std::string toDot(const std::string& title) const;

private:
    int device_;
    std::vector<Node> nodes_;
    size_t edges_ = 0;
};

}  // namespace mtia::graph
