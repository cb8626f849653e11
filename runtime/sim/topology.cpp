#include "topology.hpp"

#include <hwloc.h>

#include <cstdlib>

#include <vector>

namespace mtia::sim {

struct Topology::State {
  hwloc_topology_t topology = nullptr;
  std::vector<hwloc_obj_t> nodes;  // NUMA nodes in logical order
};

Topology::Topology() : state_(new State) {
  hwloc_topology_t topology = nullptr;
  if (hwloc_topology_init(&topology) != 0) return;
  // Only CPUs and NUMA nodes matter here; the default filters skip the slow I/O discovery. hwloc reads
  // HWLOC_XMLFILE / HWLOC_SYNTHETIC by itself, which is how tests inject a multi-node machine. Every
  // process describing a device comes here (mtia-smi's start-up too): the x86 backend, which binds the
  // thread to each CPU in turn to run cpuid for cache details, is left out unless HWLOC_COMPONENTS
  // chooses the components.
  if (std::getenv("HWLOC_COMPONENTS") == nullptr)
    (void)hwloc_topology_set_components(topology, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "x86");
  if (hwloc_topology_load(topology) != 0) {
    hwloc_topology_destroy(topology);
    return;
  }
  state_->topology = topology;
  const int count = hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_NUMANODE);
  for (int i = 0; i < count; ++i) {
    state_->nodes.push_back(hwloc_get_obj_by_type(topology, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(i)));
  }
}

const Topology& Topology::instance() {
  static const Topology* topology = new Topology();  // leaky on purpose, see state_
  return *topology;
}

int32_t Topology::numaNodeOfDevice(int32_t dev) const {
  if (state_->nodes.empty() || dev < 0) return -1;
  return static_cast<int32_t>(state_->nodes[static_cast<size_t>(dev) % state_->nodes.size()]->os_index);
}

bool Topology::bindThreadNearDevice(int32_t dev) const {
  if (state_->nodes.empty() || dev < 0) return false;
  hwloc_obj_t node = state_->nodes[static_cast<size_t>(dev) % state_->nodes.size()];
  if (node->cpuset == nullptr || hwloc_bitmap_iszero(node->cpuset)) return false;
  return hwloc_set_cpubind(state_->topology, node->cpuset, HWLOC_CPUBIND_THREAD) == 0;
}

}  // namespace mtia::sim
