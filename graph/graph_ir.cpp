#include "graph/graph_ir.hpp"

#include "core/error.hpp"

#include <fmt/format.h>

#include <iterator>

namespace mtia::graph {

const char* nodeKindName(NodeKind kind) noexcept {
    switch (kind) {
    case NodeKind::Kernel: return "kernel";
    case NodeKind::Copy: return "copy";
    case NodeKind::Fill: return "fill";
    case NodeKind::HostFunc: return "host function";
    case NodeKind::EventRecord: return "event record";
    case NodeKind::EventWait: return "event wait";
    }
    return "?";
}

NodeId Graph::add(Node node) {
    const auto id = static_cast<NodeId>(nodes_.size());
    for (NodeId d : node.deps)
        if (d >= id)
            fail(mtiaErrorUnknown, "graph node {} would depend on node {}, which is not earlier",
                 id, d);
    edges_ += node.deps.size();
    nodes_.push_back(std::move(node));
    return id;
}

namespace {

// A DOT label: the node's kind and what it does, quotes and backslashes escaped.
std::string label(NodeId id, const Node& n) {
    std::string s;
    auto out = std::back_inserter(s);
    fmt::format_to(out, "#{} {}", id, nodeKindName(n.kind));
    switch (n.kind) {
    case NodeKind::Kernel: {
        const auto& k = n.cmd.u.kernel;
        fmt::format_to(out, " {}\\ngrid ({},{},{}) block ({},{},{})", n.name, k.grid.x, k.grid.y,
                       k.grid.z, k.block.x, k.block.y, k.block.z);
        if (k.sharedMem != 0) fmt::format_to(out, " shared {}", k.sharedMem);
        fmt::format_to(out, "\\n{} argument bytes", n.argBytes.size());
        break;
    }
    case NodeKind::Copy:
        fmt::format_to(out, "\\n{} bytes {} -> {}", n.cmd.u.copy.size, n.cmd.u.copy.src,
                       n.cmd.u.copy.dst);
        break;
    case NodeKind::Fill:
        fmt::format_to(out, "\\n{} bytes at {} = 0x{:02x}", n.cmd.u.fill.size, n.cmd.u.fill.dst,
                       n.cmd.u.fill.value & 0xffu);
        break;
    case NodeKind::HostFunc:
        fmt::format_to(out, "\\nfn {} data {}", reinterpret_cast<void*>(n.cmd.u.hostFunc.fn),
                       n.cmd.u.hostFunc.userData);
        break;
    case NodeKind::EventRecord:
    case NodeKind::EventWait:
        fmt::format_to(out, "\\nevent {}", static_cast<const void*>(n.event.get()));
        break;
    }
    fmt::format_to(out, "\\nstream {}", n.streamId);
    std::string escaped;
    for (char c : s) {
        if (c == '"') escaped += '\\';
        escaped += c;
    }
    return escaped;
}

const char* shape(NodeKind kind) {
    switch (kind) {
    case NodeKind::Kernel: return "box";
    case NodeKind::HostFunc: return "ellipse";
    case NodeKind::EventRecord:
    case NodeKind::EventWait: return "diamond";
    default: return "parallelogram";
    }
}

}  // namespace

std::string Graph::toDot(const std::string& title) const {
    std::string s;
    auto out = std::back_inserter(s);
    fmt::format_to(out, "digraph mtia_graph {{\n  label=\"{} (device {}, {} nodes, {} edges)\";\n",
                   title, device_, nodes_.size(), edges_);
    for (NodeId i = 0; i < nodes_.size(); ++i)
        fmt::format_to(out, "  n{} [shape={}, label=\"{}\"];\n", i, shape(nodes_[i].kind),
                       label(i, nodes_[i]));
    for (NodeId i = 0; i < nodes_.size(); ++i)
        for (NodeId d : nodes_[i].deps)
            fmt::format_to(out, "  n{} -> n{} [label=\"#{} before #{}\"];\n", d, i, d, i);
    s += "}\n";
    return s;
}

}  // namespace mtia::graph
