#include "host_topology.hpp"

#include "bounded_hwloc.hpp"

#include <hwloc.h>

#include <cstdlib>

namespace mtia::topology {

struct HostTopology::State {
    hwloc_topology_t topology = nullptr;
    ~State() {
        if (topology != nullptr) hwloc_topology_destroy(topology);
    }
};

namespace {

std::string listOf(hwloc_const_bitmap_t set) {
    if (set == nullptr || hwloc_bitmap_iszero(set)) return "";
    char* text = nullptr;
    if (hwloc_bitmap_list_asprintf(&text, set) < 0 || text == nullptr) return "";
    std::string out(text);
    free(text);
    return out;
}

int32_t singleNode(hwloc_const_bitmap_t nodes) {
    if (nodes == nullptr || hwloc_bitmap_weight(nodes) != 1) return -1;
    return hwloc_bitmap_first(nodes);
}

hwloc_obj_t pciDevice(hwloc_topology_t topology, const std::string& busId) {
    if (busId.empty()) return nullptr;
    return hwloc_get_pcidev_by_busidstring(topology, busId.c_str());
}

bool isHostBridge(hwloc_obj_t obj) {
    return obj->type == HWLOC_OBJ_BRIDGE &&
           obj->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST;
}

// hwloc_get_common_ancestor_obj compares depths, which I/O objects do not have (theirs are virtual
// and negative), so walk the parent chains instead.
hwloc_obj_t commonAncestor(hwloc_obj_t a, hwloc_obj_t b) {
    for (hwloc_obj_t x = a->parent; x != nullptr; x = x->parent) {
        for (hwloc_obj_t y = b->parent; y != nullptr; y = y->parent) {
            if (x == y) return x;
        }
    }
    return nullptr;
}

// The xpu-smi / nvidia-smi rules over the lowest common ancestor of two PCI devices.
Link classify(hwloc_obj_t a, hwloc_obj_t b) {
    hwloc_obj_t common = commonAncestor(a, b);
    if (common == nullptr) return Link::Sys;
    if (common->type == HWLOC_OBJ_BRIDGE) {
        if (isHostBridge(common)) return Link::Phb;
        return (a->parent == common && b->parent == common) ? Link::Pix : Link::Pxb;
    }
    if (common->type == HWLOC_OBJ_PCI_DEVICE || common->type == HWLOC_OBJ_OS_DEVICE)
        return Link::Pix;
    return singleNode(common->nodeset) >= 0 ? Link::Node : Link::Sys;
}

}  // namespace

const char* linkName(Link link) {
    switch (link) {
    case Link::Self: return "X";
    case Link::Pix: return "PIX";
    case Link::Pxb: return "PXB";
    case Link::Phb: return "PHB";
    case Link::Node: return "NODE";
    case Link::Sys: return "SYS";
    }
    return "SYS";
}

std::unique_ptr<HostTopology> HostTopology::load(std::string& error) {
    // I/O objects are dropped by default; bridges and PCI devices are what the link matrix reads.
    // The bounded load refuses hostile HWLOC_* input instead of handing it to hwloc
    // (bounded_hwloc.hpp).
    hwloc_topology_t topology = loadBoundedTopology(IoObjects::Keep, error);
    if (topology == nullptr) return nullptr;
    std::unique_ptr<HostTopology> host(new HostTopology());
    host->state_ = std::make_unique<State>();
    host->state_->topology = topology;
    return host;
}

HostTopology::~HostTopology() = default;

int32_t HostTopology::numaNodeCount() const {
    return hwloc_get_nbobjs_by_type(state_->topology, HWLOC_OBJ_NUMANODE);
}

Placement HostTopology::place(const DeviceLocation& device) const {
    hwloc_topology_t topology = state_->topology;
    Placement placement;
    if (hwloc_obj_t pci = pciDevice(topology, device.busId)) {
        if (hwloc_obj_t near = hwloc_get_non_io_ancestor_obj(topology, pci)) {
            placement.cpus = listOf(near->cpuset);
            placement.nodes = listOf(near->nodeset);
            placement.numaNode = singleNode(near->nodeset);
            return placement;
        }
    }
    if (device.numaNode >= 0) {
        if (hwloc_obj_t node = hwloc_get_numanode_obj_by_os_index(
                topology, static_cast<unsigned>(device.numaNode))) {
            placement.cpus = listOf(node->cpuset);
            placement.nodes = std::to_string(device.numaNode);
            placement.numaNode = device.numaNode;
            return placement;
        }
    }
    placement.cpus = listOf(hwloc_get_root_obj(topology)->cpuset);
    return placement;
}

Link HostTopology::link(const DeviceLocation& a, const DeviceLocation& b) const {
    if (a.busId == b.busId) return Link::Self;
    hwloc_topology_t topology = state_->topology;
    hwloc_obj_t pa = pciDevice(topology, a.busId);
    hwloc_obj_t pb = pciDevice(topology, b.busId);
    if (pa != nullptr && pb != nullptr) return classify(pa, pb);
    // A device hwloc does not list sits on its NUMA node, off any PCI tree hwloc knows.
    const int32_t na = pa != nullptr ? place(a).numaNode : a.numaNode;
    const int32_t nb = pb != nullptr ? place(b).numaNode : b.numaNode;
    return (na >= 0 && na == nb) ? Link::Node : Link::Sys;
}

}  // namespace mtia::topology
