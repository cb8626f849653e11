#include "topology.hpp"

#include "platform/topology/bounded_hwloc.hpp"

#include <hwloc.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace mtia::sim {

struct Topology::State {
    hwloc_topology_t topology = nullptr;
    std::vector<hwloc_obj_t> nodes;  // NUMA nodes in logical order
    std::string unknownReason;       // why topology is nullptr
};

namespace {

// The sim has no logger of its own (it is a plug-in); a refused HWLOC_* setting is ignored on
// purpose, which the user should hear of: one line on stderr, unless MTIA_LOG_LEVEL silences
// warnings as the runtime's logger would.
void warnRefused(const std::string& why) {
    const char* level = std::getenv("MTIA_LOG_LEVEL");
    if (level != nullptr && (std::strcmp(level, "error") == 0 || std::strcmp(level, "off") == 0))
        return;
    std::fprintf(stderr, "mtia: warning: host topology unknown, devices get no NUMA node: %s\n",
                 why.c_str());
}

}  // namespace

Topology::Topology() : state_(new State) {
    // Only CPUs and NUMA nodes matter here; the default filters skip the slow I/O discovery.
    // HWLOC_XMLFILE / HWLOC_SYNTHETIC are how tests inject a multi-node machine; the bounded load
    // checks them first, since every process using a device comes here during initialisation and
    // topology is never needed to run work. A refused input or a failed load leaves the topology
    // unknown: no NUMA node, no binding.
    std::string why;
    bool refused = false;
    hwloc_topology_t topology =
        topology::loadBoundedTopology(topology::IoObjects::Skip, why, &refused);
    if (topology == nullptr) {
        state_->unknownReason = why;
        if (refused)
            warnRefused(
                why);  // hwloc's own failures stay quiet here, as before; mtia-smi topo says why
        return;
    }
    state_->topology = topology;
    const int count = hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_NUMANODE);
    for (int i = 0; i < count; ++i) {
        state_->nodes.push_back(
            hwloc_get_obj_by_type(topology, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(i)));
    }
}

const Topology& Topology::instance() {
    static const Topology* topology = new Topology();  // leaky on purpose, see state_
    return *topology;
}

const std::string& Topology::unknownReason() const {
    return state_->unknownReason;
}

int32_t Topology::numaNodeOfDevice(int32_t dev) const {
    if (state_->nodes.empty() || dev < 0) return -1;
    return static_cast<int32_t>(
        state_->nodes[static_cast<size_t>(dev) % state_->nodes.size()]->os_index);
}

bool Topology::bindThreadNearDevice(int32_t dev) const {
    if (state_->nodes.empty() || dev < 0) return false;
    hwloc_obj_t node = state_->nodes[static_cast<size_t>(dev) % state_->nodes.size()];
    if (node->cpuset == nullptr || hwloc_bitmap_iszero(node->cpuset)) return false;
    return hwloc_set_cpubind(state_->topology, node->cpuset, HWLOC_CPUBIND_THREAD) == 0;
}

}  // namespace mtia::sim
