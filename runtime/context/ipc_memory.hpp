// The runtime's side of IPC memory handles (mtia_ipc.h): the handles this
// process exported (by allocation), the deferred frees of exported
// allocations that other processes still have open ("limbo"), and the
// imports this process opened (by the pointer handed out). The records other
// processes see are the driver's (driver ABI 1.4).
//
// The 64-byte handle: a runtime header (magic, version, kind, the
// allocation's offset into the exported granules and its size) followed by
// the driver's descriptor.
#pragma once

#include "allocator/device_allocator.hpp"
#include "platform/driver/driver.hpp"

#include <mtia/mtia_ipc.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

namespace mtia {

inline constexpr uint32_t kIpcHandleMagic = 0x4350494du;  // "MIPC"
inline constexpr uint16_t kIpcHandleVersion = 1;
enum class IpcHandleKind : uint16_t { Memory = 1, Event = 2 };

struct IpcWireHandle {
    uint32_t magic;
    uint16_t version;
    uint16_t kind;    // IpcHandleKind
    uint32_t offset;  // memory: the allocation's start, from the exported range's start
    uint32_t reserved;
    uint64_t size;  // memory: the allocation's size
    mtiaDrvIpcDescriptor driver;
};
static_assert(sizeof(IpcWireHandle) == MTIA_IPC_HANDLE_SIZE);

// Checks the runtime header of a handle (argName names it in messages). Throws InvalidHandle.
IpcWireHandle readIpcHandle(const char (&bytes)[MTIA_IPC_HANDLE_SIZE], IpcHandleKind kind,
                            const char* argName);

// An open import as memory operations see it.
struct IpcMapping {
    void* base = nullptr;
    size_t size = 0;
    int32_t driverDevice = 0;
};

class IpcMemory {
public:
    explicit IpcMemory(const driver::Driver& driver) : driver_(driver) {}
    IpcMemory(const IpcMemory&) = delete;
    IpcMemory& operator=(const IpcMemory&) = delete;

    // The handle of the allocation at ptr of alloc (the same on every call until it is freed).
    // Throws the allocator's InvalidValue / NotSupported and the driver's errors.
    mtiaIpcMemHandle_t exportAllocation(allocator::DeviceAllocator& alloc, void* ptr);
    // mtiaFree's first step: true when ptr is in limbo already (a double free: throws InvalidValue)
    // or is exported with live importers (the free is deferred: nothing more to do). False: free it
    // now (its export, if any, is gone). Non-blocking. Inline: every mtiaFree asks, and a process
    // that never exported memory pays one relaxed load. A free racing with the export of the same
    // pointer is the caller's own race; otherwise the export happened before this free, and so did
    // its store of the count.
    bool interceptFree(allocator::DeviceAllocator& alloc, void* ptr) {
        if (exportedOrLimbo_.load(std::memory_order_relaxed) == 0) [[likely]]
            return false;
        return interceptFreeSlow(alloc, ptr);
    }
    // Completes the deferred frees whose importers all closed or died. Cheap when there are none.
    void collect() {
        if (limboCount_.load(std::memory_order_relaxed) != 0) collectSlow();
    }
    size_t limboSize() const { return limboCount_.load(std::memory_order_relaxed); }

    // Opens a handle of another process: the pointer and its device (driver numbering).
    void* open(const mtiaIpcMemHandle_t& handle, int32_t& driverDevice);
    // Drops one open. Throws InvalidValue (not an open IPC mapping).
    void close(void* ptr);
    // The import ptr lies in, if any (memory operations treat it as an allocation).
    std::optional<IpcMapping> findImport(const void* ptr) const;

    // mtiaDeviceReset: forgets the exports (revoked: no new opens) and deferred frees of alloc's
    // allocations, whose memory the reset releases, and closes every open of imports mapped on
    // driverDevice (reference counts included), so that opening the same handles again afterwards
    // maps them afresh. Never throws.
    void releaseDevice(const allocator::DeviceAllocator* alloc, int32_t driverDevice) noexcept;

private:
    bool interceptFreeSlow(allocator::DeviceAllocator& alloc, void* ptr);
    struct Export {
        mtiaIpcMemHandle_t handle;
        IpcWireHandle wire;
        allocator::DeviceAllocator* alloc;
    };
    struct Import {
        void* va;  // what the driver mapped (the pointer's granule)
        size_t size;
        int32_t driverDevice;
        uint32_t opens;
    };
    void collectSlow();
    // Checks the handle's offset and size against the bytes the driver mapped at va (driver
    // ABI 1.5); on a mismatch closes that open and throws InvalidHandle naming handle.
    void checkRange(const IpcWireHandle& w, void* va);
    // Under mu_: republishes the tables' sizes, which the lock-free fast paths read.
    void countLocked();

    const driver::Driver& driver_;
    mutable std::mutex mu_;
    std::unordered_map<uintptr_t, Export> exports_;  // by allocation
    std::unordered_map<uintptr_t, Export> limbo_;  // freed by the caller, importers still hold them
    std::map<uintptr_t, Import> imports_;          // by the pointer handed out
    // Written under mu_, read without it (one relaxed load on mtiaFree's and pointer lookups'
    // paths).
    std::atomic<size_t> limboCount_{0};
    std::atomic<size_t> exportedOrLimbo_{0};
    std::atomic<size_t> importCount_{0};
};

}  // namespace mtia
