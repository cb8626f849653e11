// How much of a device's memory is handed out, across every process of the
// simulated machine: charges are reservations in the cross-process registry
// (registry_link.hpp), and what is used is the sum over live processes, so
// memGetInfo and the out-of-memory check see every user of the device.
#pragma once

#include "registry_link.hpp"

#include <mtia/mtia_types.h>

#include <cstdint>

namespace mtia::sim {

// Thread-safe (the registry serialises reservations across processes and threads).
class Capacity {
public:
    Capacity(RegistryLink& registry, int32_t device, uint64_t total)
        : registry_(registry), device_(device), total_(total) {}

    // Takes bytes if they fit next to what every process holds; otherwise nothing is taken and the
    // error (mtiaErrorMemoryAllocation, or the registry's) carries the message.
    mtiaError_t charge(uint64_t bytes) { return registry_.reserve(device_, bytes); }
    void refund(uint64_t bytes) { registry_.release(device_, bytes); }

    uint64_t total() const { return total_; }
    mtiaError_t used(uint64_t& bytes) const { return registry_.used(device_, bytes); }

private:
    RegistryLink& registry_;
    int32_t device_;
    uint64_t total_;
};

}  // namespace mtia::sim
