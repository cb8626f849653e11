// The simulated driver's interprocess state: what its IPC descriptors hold,
// this process's open imports (reference counted per export) and its IPC
// events. The records other processes see live in the registry
// (registry_ipc.cpp); this is the process-local side.
#pragma once

#include "platform/registry/registry.hpp"

#include <mtia/mtia_driver.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace mtia::sim {

inline constexpr uint32_t kIpcMagic = 0x43504953u;  // "SIPC"
inline constexpr uint16_t kIpcVersion = 1;
enum class IpcKind : uint16_t { Memory = 1, Event = 2 };

// The bytes of an mtiaDrvIpcDescriptor of this driver.
struct IpcDescriptor {
    uint32_t magic;
    uint16_t version;
    uint16_t kind;  // IpcKind
    uint32_t uid;
    uint32_t machine;  // hash of the registry's name: the simulated machine
    uint32_t slot;
    uint32_t index;
    uint64_t registration;
    uint64_t generation;
};
static_assert(sizeof(IpcDescriptor) == MTIA_DRIVER_IPC_DESCRIPTOR_BYTES);

// The object behind an mtiaDrvIpcEvent.
struct IpcEvent {
    bool exporter = false;
    int32_t device = 0;
    registry::IpcRef ref;
    uint32_t exporterPid = 0;
    registry::EventRecord* record =
        nullptr;  // in the registry mapping, which lives as long as the machine
    // Exporter: tickets completed past record->completed, so that the shared figure advances only
    // over tickets that all completed, whatever order streams finish in (and however many are
    // outstanding).
    std::mutex completeMu;
    std::set<uint64_t> doneAhead;
};

// One export this process has open.
struct IpcImport {
    void* va = nullptr;
    uint64_t size = 0;  // bytes mapped: the exported range
    int32_t device = 0;
    uint32_t importIndex = 0;
    uint32_t opens = 0;
};

uint32_t machineHash(const std::string& registryName);
void pack(const IpcDescriptor& d, mtiaDrvIpcDescriptor& out);
// Checks magic, version, kind, user and machine; the message names what is wrong. Errors:
// mtiaErrorInvalidHandle, mtiaErrorNotPermitted (another user's).
mtiaError_t unpack(const char* entry, const mtiaDrvIpcDescriptor* in, IpcKind kind,
                   uint32_t machine, IpcDescriptor& out);
registry::IpcRef refOf(const IpcDescriptor& d);

struct IpcState {
    using Key = std::tuple<uint32_t, uint32_t, uint64_t,
                           uint64_t>;  // slot, index, registration, generation
    static Key keyOf(const registry::IpcRef& r) {
        return {r.slot, r.index, r.registration, r.generation};
    }

    // Locks mu. In a forked child, first forgets what the parent had open: those imports count in
    // the parent's registry slot and those events are the parent's, so the child's calls must not
    // touch them (CUDA supports no IPC across fork at all). The inherited mappings stay mapped, but
    // the child cannot close them (mtiaErrorInvalidValue) and its opens of the same handles map
    // anew under its own records; the inherited events are kept (never freed, so no new event takes
    // their address) but are dead to every entry (mtiaErrorInvalidHandle).
    std::unique_lock<std::mutex> lock();

    std::mutex mu;  // guards everything below
    std::map<Key, IpcImport> imports;
    std::map<uintptr_t, Key> importsByAddress;
    std::map<const IpcEvent*, std::unique_ptr<IpcEvent>> events;

private:
    uint64_t forkGeneration_ = 0;  // fork_guard's generation the tables belong to
    std::vector<std::unique_ptr<IpcEvent>> inherited_;
};

}  // namespace mtia::sim
