// The simulated machine's link to the cross-process registry: every process
// whose MTIA_SIM_* settings agree (or that names the same MTIA_SIM_MACHINE)
// shares device capacity through it. Opened on the first reservation or
// memory query, never by init or enumeration, so counting devices stays free.
#pragma once

#include "config.hpp"

#include "platform/registry/registry.hpp"

#include <mtia/mtia_types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

namespace mtia::sim {

class RegistryLink {
public:
    explicit RegistryLink(const Config& config);

    // Reserves bytes of device's capacity for this process. Errors: mtiaErrorMemoryAllocation (the
    // device's memory is held by live processes, or no process slot is free), and those of open().
    mtiaError_t reserve(int32_t device, uint64_t bytes);
    void release(int32_t device, uint64_t bytes);
    // The allocator's allocated bytes, into this process's slot (lock-free; dropped before the
    // first reservation, when there is no slot and nothing can be allocated yet).
    void publishAllocated(int32_t device, uint64_t bytes) noexcept {
        if (registry::Registry* registry = ready_.load(std::memory_order_acquire))
            registry->publishAllocated(static_cast<uint32_t>(device), bytes);
    }
    // The words publishAllocated writes (driver ABI 1.7, memGetAllocatedWords); false before the
    // first reservation, when there is no slot yet.
    bool allocatedWords(int32_t device, std::atomic<uint64_t>*& allocated,
                        std::atomic<uint64_t>*& peak) noexcept {
        registry::Registry* registry = ready_.load(std::memory_order_acquire);
        return registry != nullptr &&
               registry->allocatedWords(static_cast<uint32_t>(device), allocated, peak);
    }
    // Engine time spent on this process's work, ending at nowNs (CLOCK_MONOTONIC), into its slot
    // (one relaxed add, a utilisation checkpoint at most once a second; dropped before the first
    // reservation, like publishAllocated).
    void addBusy(int32_t device, uint64_t ns, uint64_t nowNs) noexcept {
        if (registry::Registry* registry = ready_.load(std::memory_order_acquire))
            registry->addBusy(static_cast<uint32_t>(device), ns, nowNs);
    }
    // Whether the registry is open (after the first reservation or memory query); one acquire load.
    bool isOpen() const noexcept { return ready_.load(std::memory_order_acquire) != nullptr; }
    // Bytes of device held by every live process of the machine. Errors: those of open().
    mtiaError_t used(int32_t device, uint64_t& bytes);
    // The registry, opened on first use. Errors: mtiaErrorNotPermitted (the object or its lock file
    // belongs to another user or is not mode 0600), mtiaErrorMemoryAllocation (/dev/shm is full),
    // mtiaErrorInitializationError (anything else, e.g. a file size limit below the registry's
    // size); the message names the file and the cause. When another user holds the usual name of
    // the user's registry directory, a fall-back is used and a warning saying so goes to stderr
    // once.
    mtiaError_t open(registry::Registry*& out);

private:
    registry::MachineSpec spec_;
    std::mutex mu_;
    std::unique_ptr<registry::Registry> registry_;
    std::atomic<registry::Registry*> ready_{nullptr};
};

}  // namespace mtia::sim
