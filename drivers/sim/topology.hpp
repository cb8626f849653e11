// Where the simulated devices sit in the host: device i is attached to NUMA
// node (i mod nodes) of the host topology as hwloc sees it, so a host with an
// injected topology (HWLOC_XMLFILE) places devices like a multi-socket server.
#pragma once

#include <cstdint>
#include <string>

namespace mtia::sim {

// The host topology, loaded on first use and kept for the life of the process. Thread-safe. Hostile
// HWLOC_* input is refused before hwloc sees it (platform/topology/bounded_hwloc.hpp): the topology
// is then unknown, devices have NUMA node -1 and engines are not bound.
class Topology {
public:
    static const Topology& instance();

    // The os_index of the NUMA node of device dev, -1 when hwloc knows no NUMA node.
    int32_t numaNodeOfDevice(int32_t dev) const;
    // Why the topology is unknown (an HWLOC_* input refused, hwloc failed); "" when it is known.
    const std::string& unknownReason() const;
    // Binds the calling thread to the CPUs of device dev's NUMA node; false when that is not
    // possible.
    bool bindThreadNearDevice(int32_t dev) const;

private:
    Topology();
    struct State;
    State* state_;  // never freed: engine threads may consult it during static destruction
};

}  // namespace mtia::sim
