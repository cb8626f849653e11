// Entries about device memory: reservations, physical memory, mappings.
#include "ops_common.hpp"

namespace mtia::sim::ops {

// Thread-safe, does not block (the first call may wait briefly to open the machine's registry).
// free: capacity no process of the machine holds. Errors: mtiaErrorInvalidDevice,
// mtiaErrorInvalidValue (NULL pointer), those of RegistryLink::open.
mtiaError_t memGetInfo(int32_t dev, uint64_t* free, uint64_t* total) {
    return guarded("memGetInfo", [&] {
        Device* device = nullptr;
        if (mtiaError_t err = deviceFor("memGetInfo", dev, device); err != mtiaSuccess) return err;
        if (free == nullptr || total == nullptr)
            return nullArgument("memGetInfo", "free and total");
        return device->memory().info(free, total);
    });
}

// Thread-safe, never blocks, sets no message (it runs on every allocation and free): one relaxed
// store into this process's registry slot, none before the process reserved device memory.
// Errors: mtiaErrorInvalidDevice.
mtiaError_t memReportAllocated(int32_t dev, uint64_t allocatedBytes) {
    Machine* machine = Machine::instance();
    if (machine == nullptr || dev < 0 || dev >= machine->deviceCount())
        return mtiaErrorInvalidDevice;
    machine->registry().publishAllocated(dev, allocatedBytes);
    return mtiaSuccess;
}

// Thread-safe, never blocks: this process's registry slot words for dev, or NULL and NULL before
// the process reserved device memory (no slot yet). Errors: mtiaErrorInvalidDevice,
// mtiaErrorInvalidValue.
mtiaError_t memGetAllocatedWords(int32_t dev, uint64_t** allocated, uint64_t** peak) {
    return guarded("memGetAllocatedWords", [&] {
        Device* device = nullptr;
        if (mtiaError_t err = deviceFor("memGetAllocatedWords", dev, device); err != mtiaSuccess)
            return err;
        if (allocated == nullptr || peak == nullptr)
            return nullArgument("memGetAllocatedWords", "allocated and peak");
        std::atomic<uint64_t>* a = nullptr;
        std::atomic<uint64_t>* p = nullptr;
        static_assert(std::atomic<uint64_t>::is_always_lock_free &&
                      sizeof(std::atomic<uint64_t>) == sizeof(uint64_t));
        if (device->machine().registry().allocatedWords(dev, a, p)) {
            *allocated = reinterpret_cast<uint64_t*>(a);
            *peak = reinterpret_cast<uint64_t*>(p);
        } else {
            *allocated = nullptr;
            *peak = nullptr;
        }
        return mtiaSuccess;
    });
}

// Thread-safe, does not block on device work. Errors: mtiaErrorInvalidDevice, mtiaErrorInvalidValue
// (va NULL, size 0 or not granular, bad alignment), mtiaErrorMemoryAllocation (no free range fits).
mtiaError_t vaReserve(int32_t dev, uint64_t size, uint64_t alignment, void** va) {
    return guarded("vaReserve", [&] {
        Device* device = nullptr;
        if (mtiaError_t err = deviceFor("vaReserve", dev, device); err != mtiaSuccess) return err;
        if (va == nullptr) return nullArgument("vaReserve", "va");
        return device->memory().vaReserve(size, alignment, va);
    });
}

// Thread-safe. Errors: mtiaErrorInvalidDevice, mtiaErrorInvalidValue (not exactly a reservation of
// dev), mtiaErrorIllegalState (still mapped).
mtiaError_t vaRelease(int32_t dev, void* va, uint64_t size) {
    return guarded("vaRelease", [&] {
        Device* device = nullptr;
        if (mtiaError_t err = deviceFor("vaRelease", dev, device); err != mtiaSuccess) return err;
        if (va == nullptr) return nullArgument("vaRelease", "va");
        return device->memory().vaRelease(va, size);
    });
}

// Thread-safe. Errors: mtiaErrorInvalidDevice, mtiaErrorInvalidValue (mem NULL, size 0 or not
// granular), mtiaErrorMemoryAllocation (capacity exceeded, or injected by MTIA_SIM_FAULTS alloc=N).
mtiaError_t memCreate(int32_t dev, uint64_t size, mtiaDrvMem* mem) {
    return guarded("memCreate", [&] {
        Device* device = nullptr;
        if (mtiaError_t err = deviceFor("memCreate", dev, device); err != mtiaSuccess) return err;
        if (mem == nullptr) return nullArgument("memCreate", "mem");
        if (size == 0 || size % kGranularity != 0) {
            return reportErrorf(
                mtiaErrorInvalidValue,
                "memCreate: size {} is not a positive multiple of the granularity {}", size,
                kGranularity);
        }
        Machine& machine = device->machine();
        if (machine.faults().nextAllocFails()) {
            return reportErrorf(
                mtiaErrorMemoryAllocation,
                "memCreate: injected fault (MTIA_SIM_FAULTS) for {} bytes on device {}", size, dev);
        }
        std::unique_ptr<PhysicalMemory> created;
        if (mtiaError_t err = device->memory().create(size, created); err != mtiaSuccess)
            return err;
        Handles& handles = machine.handles();
        std::lock_guard lock(handles.memMu);
        PhysicalMemory* raw = created.get();
        handles.mems.emplace(raw, std::move(created));
        *mem = reinterpret_cast<mtiaDrvMem>(raw);
        return mtiaSuccess;
    });
}

// Thread-safe. Errors: mtiaErrorInvalidHandle, mtiaErrorIllegalState (still mapped).
mtiaError_t memRelease(mtiaDrvMem mem) {
    return guarded("memRelease", [&] {
        Machine* machine = nullptr;
        if (mtiaError_t err = machineFor("memRelease", machine); err != mtiaSuccess) return err;
        Handles& handles = machine->handles();
        std::lock_guard lock(handles.memMu);
        auto it = handles.mems.find(reinterpret_cast<const PhysicalMemory*>(mem));
        if (it == handles.mems.end()) {
            return reportErrorf(mtiaErrorInvalidHandle,
                                "memRelease: {} is not a live memory handle",
                                static_cast<void*>(mem));
        }
        if (mtiaError_t err = it->second->owner->release(*it->second); err != mtiaSuccess)
            return err;
        handles.mems.erase(it);
        return mtiaSuccess;
    });
}

// Thread-safe. Errors: mtiaErrorInvalidHandle, mtiaErrorInvalidValue (va NULL, not granular, not
// inside one reservation of mem's device, beyond mem), mtiaErrorIllegalState (already mapped),
// mtiaErrorMemoryAllocation (mmap failed).
mtiaError_t memMap(void* va, uint64_t size, mtiaDrvMem mem, uint64_t offset) {
    return guarded("memMap", [&] {
        Machine* machine = nullptr;
        if (mtiaError_t err = machineFor("memMap", machine); err != mtiaSuccess) return err;
        Handles& handles = machine->handles();
        std::lock_guard lock(handles.memMu);  // keeps mem from being released meanwhile
        auto it = handles.mems.find(reinterpret_cast<const PhysicalMemory*>(mem));
        if (it == handles.mems.end()) {
            return reportErrorf(mtiaErrorInvalidHandle, "memMap: {} is not a live memory handle",
                                static_cast<void*>(mem));
        }
        if (va == nullptr) return nullArgument("memMap", "va");
        return it->second->owner->map(va, size, *it->second, offset);
    });
}

// Thread-safe. Errors: mtiaErrorInvalidValue (not exactly whole mappings of one device).
mtiaError_t memUnmap(void* va, uint64_t size) {
    return guarded("memUnmap", [&] {
        Machine* machine = nullptr;
        if (mtiaError_t err = machineFor("memUnmap", machine); err != mtiaSuccess) return err;
        Device* device = machine->deviceForAddress(va);
        if (device == nullptr)
            return reportErrorf(mtiaErrorInvalidValue, "memUnmap: {} is not a device address", va);
        return device->memory().unmap(va, size);
    });
}

}  // namespace mtia::sim::ops
