// A device's memory. Physical memory is one memfd per device (its "DRAM"),
// handed out as ranges of file offsets; device addresses are one reserved
// PROT_NONE range per device, into which physical ranges are mapped
// MAP_SHARED. Device pointers are therefore plain host addresses that kernels
// can dereference, that are told apart from host memory by range, and whose
// bytes stay the same when mapped again elsewhere.
#pragma once

#include "capacity.hpp"
#include "range_allocator.hpp"

#include "platform/registry/registry.hpp"

#include <mtia/mtia_types.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>

namespace mtia::sim {

class DeviceMemory;

// The object behind an mtiaDrvMem handle.
struct PhysicalMemory {
    DeviceMemory* owner = nullptr;
    uint64_t fileOffset = 0;
    uint64_t size = 0;
    uint64_t mappings = 0;  // live mappings of it; guarded by the owner's lock
};

class DeviceMemory {
public:
    // capacity: the device's memory, a multiple of kGranularity, shared with every process of the
    // machine through registry. Reserves nothing yet.
    DeviceMemory(RegistryLink& registry, int32_t device, uint64_t capacity);
    ~DeviceMemory();
    DeviceMemory(const DeviceMemory&) = delete;
    DeviceMemory& operator=(const DeviceMemory&) = delete;

    int32_t device() const { return device_; }
    uint64_t capacity() const { return capacity_.total(); }

    // The device's whole virtual range, reserved on first use. Errors: mtiaErrorMemoryAllocation.
    mtiaError_t addressRange(uint64_t* base, uint64_t* size);
    mtiaError_t vaReserve(uint64_t size, uint64_t alignment, void** va);
    mtiaError_t vaRelease(void* va, uint64_t size);
    mtiaError_t create(uint64_t size, std::unique_ptr<PhysicalMemory>& mem);
    mtiaError_t release(PhysicalMemory& mem);
    mtiaError_t map(void* va, uint64_t size, PhysicalMemory& mem, uint64_t offset);
    mtiaError_t unmap(void* va, uint64_t size);
    // free: what every process of the machine leaves. Errors: those of RegistryLink::open.
    mtiaError_t info(uint64_t* free, uint64_t* total) const;

    // Whether p lies in this device's reserved range (mapped or not). Lock-free.
    bool inAddressRange(const void* p) const;
    // Whether [p, p+bytes) is covered by mappings of this device (0 bytes: p itself must be). Takes
    // a shared lock only, so kernels on every engine can ask at once.
    bool isMapped(const void* p, uint64_t bytes) const;

    // --- IPC (memory_ipc.cpp)
    // Where [offset, +size) of mem lies in the device's memory file, for an export (info's file
    // fields and device). Errors: mtiaErrorInvalidValue (range not granular or beyond mem).
    mtiaError_t exportRange(const PhysicalMemory& mem, uint64_t offset, uint64_t size,
                            registry::ExportInfo& info);
    // Maps [fileOffset, +size) of fd (another process's memory file of this device) at new
    // addresses of this device's range, as device memory of this device. Not charged to capacity:
    // the exporter holds it. Errors: mtiaErrorMemoryAllocation (no addresses, mmap failed).
    mtiaError_t mapImport(int fd, uint64_t fileOffset, uint64_t size, void** va);
    // Undoes mapImport. Errors: mtiaErrorInvalidValue (va is not an import).
    mtiaError_t unmapImport(void* va);

private:
    struct Mapping {
        uint64_t size;
        PhysicalMemory* mem;
    };

    mtiaError_t ensureReservedLocked();
    mtiaError_t ensureBackingLocked();
    bool isMappedLocked(uintptr_t start, uint64_t bytes) const;

    const int32_t device_;
    const uint64_t
        span_;  // bytes of address space and of memfd: 4x capacity, room for fragmentation

    mutable std::mutex mu_;
    Capacity capacity_;
    std::atomic<uintptr_t> base_{0};  // 0 until reserved; published so inAddressRange needs no lock
    RangeAllocator va_;
    RangeAllocator file_;
    int memfd_ = -1;
    std::map<uintptr_t, uint64_t> reservations_;  // vaReserve ranges: start -> size

    mutable std::shared_mutex mappingsMu_;  // taken after mu_ by writers
    std::map<uintptr_t, Mapping> mappings_;
    std::map<uintptr_t, std::unique_ptr<PhysicalMemory>>
        imports_;  // mapImport ranges by address; under mu_
};

}  // namespace mtia::sim
