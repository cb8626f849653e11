// What the driver's C entry points (ops_*.cpp, gathered into the table by
// ops.cpp) share: each validates its arguments and handles, turns every
// failure into a status code plus a thread-local message, and never lets a C++
// exception cross the C boundary. Unless an entry says otherwise, it may be
// called from any thread at any time after init, and returns
// mtiaErrorInitializationError before init.
#pragma once

#include "device.hpp"
#include "error.hpp"
#include "machine.hpp"
#include "scheduler.hpp"

#include <mtia/mtia_driver.h>

#include <exception>
#include <new>

namespace mtia::sim::ops {

template <class Fn>
mtiaError_t guarded(const char* entry, Fn&& fn) noexcept {
    try {
        return fn();
    } catch (const std::bad_alloc&) {
        return reportErrorf(mtiaErrorMemoryAllocation, "{}: out of host memory", entry);
    } catch (const std::exception& e) {
        return reportErrorf(mtiaErrorUnknown, "{}: {}", entry, e.what());
    } catch (...) {
        return reportErrorf(mtiaErrorUnknown, "{}: unexpected exception", entry);
    }
}

inline mtiaError_t machineFor(const char* entry, Machine*& machine) {
    machine = Machine::instance();
    if (machine == nullptr) {
        return reportErrorf(mtiaErrorInitializationError,
                            "{}: the driver is not initialised (call init first)", entry);
    }
    return mtiaSuccess;
}

inline mtiaError_t deviceFor(const char* entry, int32_t dev, Device*& device) {
    Machine* machine = nullptr;
    if (mtiaError_t err = machineFor(entry, machine); err != mtiaSuccess) return err;
    device = machine->device(dev);
    if (device == nullptr) {
        return reportErrorf(mtiaErrorInvalidDevice,
                            "{}: device {} does not exist (the machine has {} device(s))", entry,
                            dev, machine->deviceCount());
    }
    return mtiaSuccess;
}

inline mtiaError_t nullArgument(const char* entry, const char* name) {
    return reportErrorf(mtiaErrorInvalidValue, "{}: {} must not be NULL", entry, name);
}

// A blocking wait on an engine thread (a host function calling back) for work of its own device
// could wait for itself or for queues that need the engine it occupies.
inline bool waitWouldBlockEngine(const Device& device) {
    const Queue* current = Scheduler::currentQueue();
    return current != nullptr && &current->device() == &device;
}

// The entries, one file per area.
mtiaError_t init(uint32_t flags);
const char* getName();
mtiaError_t deviceGetCount(int32_t* count);
mtiaError_t deviceGetInfo(int32_t dev, mtiaDrvDeviceInfo* info);
mtiaError_t deviceGetStatus(int32_t dev);
mtiaError_t deviceSynchronize(int32_t dev);
mtiaError_t deviceSetPeerAccess(int32_t dev, int32_t peer, int32_t enable);
const char* lastError();
mtiaError_t clockNow(uint64_t* ns);
int32_t isDriverThread();

mtiaError_t memGetInfo(int32_t dev, uint64_t* free, uint64_t* total);
mtiaError_t memReportAllocated(int32_t dev, uint64_t allocatedBytes);
mtiaError_t memGetAllocatedWords(int32_t dev, uint64_t** allocated, uint64_t** peak);
mtiaError_t deviceGetFaultWord(int32_t dev, const uint32_t** word);
mtiaError_t deviceReset(int32_t dev);
mtiaError_t vaReserve(int32_t dev, uint64_t size, uint64_t alignment, void** va);
mtiaError_t vaRelease(int32_t dev, void* va, uint64_t size);
mtiaError_t memCreate(int32_t dev, uint64_t size, mtiaDrvMem* mem);
mtiaError_t ipcMemExport(mtiaDrvMem mem, uint64_t offset, uint64_t size,
                         mtiaDrvIpcDescriptor* desc);
mtiaError_t ipcMemRevoke(const mtiaDrvIpcDescriptor* desc, uint32_t* openers);
mtiaError_t ipcMemOpen(const mtiaDrvIpcDescriptor* desc, uint32_t flags, void** va, int32_t* dev);
mtiaError_t ipcMemClose(void* va);
mtiaError_t ipcEventExport(int32_t dev, mtiaDrvIpcDescriptor* desc, mtiaDrvIpcEvent* event);
mtiaError_t ipcEventOpen(const mtiaDrvIpcDescriptor* desc, mtiaDrvIpcEvent* event, int32_t* dev);
mtiaError_t ipcEventClose(mtiaDrvIpcEvent event);
mtiaError_t ipcEventRecord(mtiaDrvIpcEvent event, uint64_t* ticket);
mtiaError_t ipcEventComplete(mtiaDrvIpcEvent event, uint64_t ticket);
mtiaError_t ipcEventLatest(mtiaDrvIpcEvent event, uint64_t* ticket);
mtiaError_t ipcEventWait(mtiaDrvIpcEvent event, uint64_t ticket, uint64_t timeoutNs);
mtiaError_t ipcMemSize(void* va, uint64_t* size);
mtiaError_t memRelease(mtiaDrvMem mem);
mtiaError_t memMap(void* va, uint64_t size, mtiaDrvMem mem, uint64_t offset);
mtiaError_t memUnmap(void* va, uint64_t size);

mtiaError_t queueCreate(int32_t dev, int32_t priority, uint32_t flags, mtiaDrvQueue* queue);
mtiaError_t queueDestroy(mtiaDrvQueue queue);
mtiaError_t queueSubmit(mtiaDrvQueue queue, const mtiaDrvCommand* cmd, uint64_t* seq);
mtiaError_t queueQuery(mtiaDrvQueue queue, uint64_t* completed);
mtiaError_t queueWait(mtiaDrvQueue queue, uint64_t seq, uint32_t flags);
mtiaError_t queueGetCounts(mtiaDrvQueue queue, uint64_t* submitted, uint64_t* completed);

mtiaError_t moduleLoad(const char* path, mtiaDrvModule* module);
mtiaError_t moduleUnload(mtiaDrvModule module);
mtiaError_t moduleGetKernel(mtiaDrvModule module, const char* name, mtiaDrvKernel* kernel);
mtiaError_t kernelGetInfo(mtiaDrvKernel kernel, uint32_t* numArgs, uint32_t* argSizes);

mtiaError_t commandListCreate(int32_t dev, const mtiaDrvCommand* cmds, uint64_t count,
                              mtiaDrvCommandList* list);
mtiaError_t commandListDestroy(mtiaDrvCommandList list);

// Driver ABI 1.6 (ops_machine.cpp): these two work before init and without it.
mtiaError_t machineGetSpec(mtiaDrvMachineSpec* spec);
mtiaError_t machineDescribeDevice(const mtiaDrvMachineSpec* spec, int32_t dev,
                                  mtiaDrvDeviceInfo* info);

}  // namespace mtia::sim::ops
