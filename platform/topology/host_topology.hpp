// The host as hwloc sees it, with its PCI tree: where a device sits (CPU and
// NUMA affinity) and how two devices are linked, in nvidia-smi's topo -m
// terms. HWLOC_XMLFILE replaces the real host, which is how tests get a
// two-socket machine on a one-node CI box.
//
// Thread safety: a loaded HostTopology is immutable; every const member may be
// called from any thread. Blocking: load() reads sysfs (or the XML file) and
// takes milliseconds; the rest never block.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace mtia::topology {

// NVML's numeric scale: smaller is closer.
enum class Link : int32_t { Self = 0, Pix = 10, Pxb = 20, Phb = 30, Node = 40, Sys = 50 };
const char* linkName(Link link);  // "X", "PIX", "PXB", "PHB", "NODE", "SYS"

// A device as the topology knows it: its PCI bus id and, for a device hwloc does not list (a
// simulated one), the NUMA node it is attached to (-1: none).
struct DeviceLocation {
    std::string busId;
    int32_t numaNode = -1;
};

struct Placement {
    std::string cpus;       // hwloc list syntax, "0-3"; "" when unknown
    std::string nodes;      // "0", "0-1"; "" when unknown
    int32_t numaNode = -1;  // the one nearest NUMA node, -1 when none or several
};

class HostTopology {
public:
    // Loads the host topology including PCI bridges and devices. Returns nullptr and sets error
    // when hwloc cannot load it or an HWLOC_* input is refused (loadBoundedTopology,
    // bounded_hwloc.hpp).
    static std::unique_ptr<HostTopology> load(std::string& error);
    ~HostTopology();
    HostTopology(const HostTopology&) = delete;
    HostTopology& operator=(const HostTopology&) = delete;

    Placement place(const DeviceLocation& device) const;
    Link link(const DeviceLocation& a, const DeviceLocation& b) const;
    int32_t numaNodeCount() const;

private:
    HostTopology() = default;
    struct State;
    std::unique_ptr<State> state_;
};

}  // namespace mtia::topology
