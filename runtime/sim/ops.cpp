// The driver's C entry points (the mtiaDriverOps table). Each validates its
// arguments and handles, turns every failure into a status code plus a
// thread-local message, and never lets a C++ exception cross the C boundary.
// Unless an entry says otherwise, it may be called from any thread at any time
// after init, and returns mtiaErrorInitializationError before init.
#include "clock.hpp"
#include "device.hpp"
#include "error.hpp"
#include "machine.hpp"
#include "sim_driver.h"

#include <cstring>
#include <new>
#include <vector>

namespace mtia::sim {
namespace {

inline constexpr uint64_t kMaxSharedMem = 48 * 1024;
inline constexpr uint32_t kMaxBlockThreads = 1024;

template <class Fn>
mtiaError_t guarded(const char* entry, Fn&& fn) noexcept {
  try {
    return fn();
  } catch (const std::bad_alloc&) {
    return failf(mtiaErrorMemoryAllocation, "{}: out of host memory", entry);
  } catch (const std::exception& e) {
    return failf(mtiaErrorUnknown, "{}: {}", entry, e.what());
  } catch (...) {
    return failf(mtiaErrorUnknown, "{}: unexpected exception", entry);
  }
}

mtiaError_t machineFor(const char* entry, Machine*& machine) {
  machine = Machine::instance();
  if (machine == nullptr) {
    return failf(mtiaErrorInitializationError, "{}: the driver is not initialised (call init first)", entry);
  }
  return mtiaSuccess;
}

mtiaError_t deviceFor(const char* entry, int32_t dev, Device*& device) {
  Machine* machine = nullptr;
  if (mtiaError_t err = machineFor(entry, machine); err != mtiaSuccess) return err;
  device = machine->device(dev);
  if (device == nullptr) {
    return failf(mtiaErrorInvalidDevice, "{}: device {} does not exist (the machine has {} device(s))", entry, dev,
                 machine->deviceCount());
  }
  return mtiaSuccess;
}

mtiaError_t nullArgument(const char* entry, const char* name) {
  return failf(mtiaErrorInvalidValue, "{}: {} must not be NULL", entry, name);
}

// A blocking wait on an engine thread (a host function calling back) for work of its own device could
// wait for itself or for queues that need the engine it occupies.
bool waitWouldBlockEngine(const Device& device) {
  const Queue* current = Scheduler::currentQueue();
  return current != nullptr && &current->device() == &device;
}

// ---- mandatory ----

// Not thread-safe with other entries (the runtime calls it once, first); repeated calls return
// mtiaSuccess once it succeeded. Does not block. Errors: mtiaErrorInvalidValue (flags not 0, or a
// bad MTIA_SIM_* variable).
mtiaError_t opInit(uint32_t flags) {
  return guarded("init", [&] {
    if (flags != 0) return failf(mtiaErrorInvalidValue, "init: flags must be 0, got {:#x}", flags);
    return Machine::initialize();
  });
}

// Thread-safe, static string, works before init.
const char* opGetName() { return "sim"; }

// Thread-safe, does not block, starts nothing. Errors: mtiaErrorInvalidValue (count NULL).
mtiaError_t opDeviceGetCount(int32_t* count) {
  return guarded("deviceGetCount", [&] {
    Machine* machine = nullptr;
    if (mtiaError_t err = machineFor("deviceGetCount", machine); err != mtiaSuccess) return err;
    if (count == nullptr) return nullArgument("deviceGetCount", "count");
    *count = machine->deviceCount();
    return mtiaSuccess;
  });
}

// Thread-safe; the first call per device reserves its address range and the first call of the process
// loads the host topology (milliseconds). Writes at most info->structSize bytes and sets structSize to
// the bytes written. Errors: mtiaErrorInvalidDevice, mtiaErrorInvalidValue (info NULL or structSize < 4),
// mtiaErrorMemoryAllocation (no address space for the device's range).
mtiaError_t opDeviceGetInfo(int32_t dev, mtiaDrvDeviceInfo* info) {
  return guarded("deviceGetInfo", [&] {
    Device* device = nullptr;
    if (mtiaError_t err = deviceFor("deviceGetInfo", dev, device); err != mtiaSuccess) return err;
    if (info == nullptr) return nullArgument("deviceGetInfo", "info");
    if (info->structSize < sizeof(uint32_t)) {
      return failf(mtiaErrorInvalidValue, "deviceGetInfo: info->structSize {} is too small", info->structSize);
    }
    mtiaDrvDeviceInfo full{};
    if (mtiaError_t err = device->describe(full); err != mtiaSuccess) return err;
    const uint32_t bytes = std::min<uint32_t>(info->structSize, sizeof(full));
    full.structSize = bytes;
    std::memcpy(info, &full, bytes);
    return mtiaSuccess;
  });
}

// Thread-safe, does not block. Errors: mtiaErrorInvalidDevice, mtiaErrorLaunchFailure (sticky fault;
// the message names the kernel or command and what went wrong).
mtiaError_t opDeviceGetStatus(int32_t dev) {
  return guarded("deviceGetStatus", [&] {
    Device* device = nullptr;
    if (mtiaError_t err = deviceFor("deviceGetStatus", dev, device); err != mtiaSuccess) return err;
    return device->status();
  });
}

// Thread-safe; blocks until every command submitted to the device before the call completed (queues
// destroyed meanwhile included). Errors: mtiaErrorInvalidDevice, mtiaErrorNotPermitted (called by a
// host function of this device with work pending: it would wait for itself), mtiaErrorLaunchFailure.
mtiaError_t opDeviceSynchronize(int32_t dev) {
  return guarded("deviceSynchronize", [&] {
    Device* device = nullptr;
    if (mtiaError_t err = deviceFor("deviceSynchronize", dev, device); err != mtiaSuccess) return err;
    const std::vector<std::shared_ptr<Queue>> queues = device->queues();
    for (const std::shared_ptr<Queue>& queue : queues) {
      const uint64_t target = queue->submitted();
      if (queue->completed() >= target) continue;
      if (waitWouldBlockEngine(*device)) {
        return failf(mtiaErrorNotPermitted,
                     "deviceSynchronize: called from a host function of device {} while its work is pending", dev);
      }
      queue->waitFor(target, true);
    }
    return device->status();
  });
}

// Thread-safe, does not block. free: capacity not handed out by memCreate. Errors:
// mtiaErrorInvalidDevice, mtiaErrorInvalidValue (NULL pointer).
mtiaError_t opMemGetInfo(int32_t dev, uint64_t* free, uint64_t* total) {
  return guarded("memGetInfo", [&] {
    Device* device = nullptr;
    if (mtiaError_t err = deviceFor("memGetInfo", dev, device); err != mtiaSuccess) return err;
    if (free == nullptr || total == nullptr) return nullArgument("memGetInfo", "free and total");
    device->memory().info(free, total);
    return mtiaSuccess;
  });
}

// Thread-safe, does not block on device work. Errors: mtiaErrorInvalidDevice, mtiaErrorInvalidValue
// (va NULL, size 0 or not granular, bad alignment), mtiaErrorMemoryAllocation (no free range fits).
mtiaError_t opVaReserve(int32_t dev, uint64_t size, uint64_t alignment, void** va) {
  return guarded("vaReserve", [&] {
    Device* device = nullptr;
    if (mtiaError_t err = deviceFor("vaReserve", dev, device); err != mtiaSuccess) return err;
    if (va == nullptr) return nullArgument("vaReserve", "va");
    return device->memory().vaReserve(size, alignment, va);
  });
}

// Thread-safe. Errors: mtiaErrorInvalidDevice, mtiaErrorInvalidValue (not exactly a reservation of
// dev), mtiaErrorIllegalState (still mapped).
mtiaError_t opVaRelease(int32_t dev, void* va, uint64_t size) {
  return guarded("vaRelease", [&] {
    Device* device = nullptr;
    if (mtiaError_t err = deviceFor("vaRelease", dev, device); err != mtiaSuccess) return err;
    if (va == nullptr) return nullArgument("vaRelease", "va");
    return device->memory().vaRelease(va, size);
  });
}

// Thread-safe. Errors: mtiaErrorInvalidDevice, mtiaErrorInvalidValue (mem NULL, size 0 or not
// granular), mtiaErrorMemoryAllocation (capacity exceeded, or injected by MTIA_SIM_FAULTS alloc=N).
mtiaError_t opMemCreate(int32_t dev, uint64_t size, mtiaDrvMem* mem) {
  return guarded("memCreate", [&] {
    Device* device = nullptr;
    if (mtiaError_t err = deviceFor("memCreate", dev, device); err != mtiaSuccess) return err;
    if (mem == nullptr) return nullArgument("memCreate", "mem");
    if (size == 0 || size % kGranularity != 0) {
      return failf(mtiaErrorInvalidValue, "memCreate: size {} is not a positive multiple of the granularity {}",
                   size, kGranularity);
    }
    Machine& machine = device->machine();
    if (machine.faults().nextAllocFails()) {
      return failf(mtiaErrorMemoryAllocation, "memCreate: injected fault (MTIA_SIM_FAULTS) for {} bytes on device {}",
                   size, dev);
    }
    std::unique_ptr<PhysicalMemory> created;
    if (mtiaError_t err = device->memory().create(size, created); err != mtiaSuccess) return err;
    Handles& handles = machine.handles();
    std::lock_guard lock(handles.memMu);
    PhysicalMemory* raw = created.get();
    handles.mems.emplace(raw, std::move(created));
    *mem = reinterpret_cast<mtiaDrvMem>(raw);
    return mtiaSuccess;
  });
}

// Thread-safe. Errors: mtiaErrorInvalidHandle, mtiaErrorIllegalState (still mapped).
mtiaError_t opMemRelease(mtiaDrvMem mem) {
  return guarded("memRelease", [&] {
    Machine* machine = nullptr;
    if (mtiaError_t err = machineFor("memRelease", machine); err != mtiaSuccess) return err;
    Handles& handles = machine->handles();
    std::lock_guard lock(handles.memMu);
    auto it = handles.mems.find(reinterpret_cast<const PhysicalMemory*>(mem));
    if (it == handles.mems.end()) return failf(mtiaErrorInvalidHandle, "memRelease: {} is not a live memory handle", static_cast<void*>(mem));
    if (mtiaError_t err = it->second->owner->release(*it->second); err != mtiaSuccess) return err;
    handles.mems.erase(it);
    return mtiaSuccess;
  });
}

// Thread-safe. Errors: mtiaErrorInvalidHandle, mtiaErrorInvalidValue (va NULL, not granular, not
// inside one reservation of mem's device, beyond mem), mtiaErrorIllegalState (already mapped),
// mtiaErrorMemoryAllocation (mmap failed).
mtiaError_t opMemMap(void* va, uint64_t size, mtiaDrvMem mem, uint64_t offset) {
  return guarded("memMap", [&] {
    Machine* machine = nullptr;
    if (mtiaError_t err = machineFor("memMap", machine); err != mtiaSuccess) return err;
    Handles& handles = machine->handles();
    std::lock_guard lock(handles.memMu);  // keeps mem from being released meanwhile
    auto it = handles.mems.find(reinterpret_cast<const PhysicalMemory*>(mem));
    if (it == handles.mems.end()) return failf(mtiaErrorInvalidHandle, "memMap: {} is not a live memory handle", static_cast<void*>(mem));
    if (va == nullptr) return nullArgument("memMap", "va");
    return it->second->owner->map(va, size, *it->second, offset);
  });
}

// Thread-safe. Errors: mtiaErrorInvalidValue (not exactly whole mappings of one device).
mtiaError_t opMemUnmap(void* va, uint64_t size) {
  return guarded("memUnmap", [&] {
    Machine* machine = nullptr;
    if (mtiaError_t err = machineFor("memUnmap", machine); err != mtiaSuccess) return err;
    Device* device = machine->deviceForAddress(va);
    if (device == nullptr) return failf(mtiaErrorInvalidValue, "memUnmap: {} is not a device address", va);
    return device->memory().unmap(va, size);
  });
}

// Thread-safe; the device's first queue starts its engine threads. Errors: mtiaErrorInvalidDevice,
// mtiaErrorInvalidValue (queue NULL, flags not 0).
mtiaError_t opQueueCreate(int32_t dev, int32_t priority, uint32_t flags, mtiaDrvQueue* queue) {
  return guarded("queueCreate", [&] {
    Device* device = nullptr;
    if (mtiaError_t err = deviceFor("queueCreate", dev, device); err != mtiaSuccess) return err;
    if (queue == nullptr) return nullArgument("queueCreate", "queue");
    if (flags != 0) return failf(mtiaErrorInvalidValue, "queueCreate: flags must be 0, got {:#x}", flags);
    std::shared_ptr<Queue> created = device->createQueue(priority);
    Handles& handles = device->machine().handles();
    std::unique_lock lock(handles.mu);
    const Queue* raw = created.get();
    handles.queues.emplace(raw, std::move(created));
    *queue = reinterpret_cast<mtiaDrvQueue>(const_cast<Queue*>(raw));
    return mtiaSuccess;
  });
}

// Thread-safe, returns at once: queued commands still run, and commands that wait on this queue keep
// it alive. Errors: mtiaErrorInvalidHandle.
mtiaError_t opQueueDestroy(mtiaDrvQueue queue) {
  return guarded("queueDestroy", [&] {
    Machine* machine = nullptr;
    if (mtiaError_t err = machineFor("queueDestroy", machine); err != mtiaSuccess) return err;
    Handles& handles = machine->handles();
    std::shared_ptr<Queue> dropped;  // released after the lock
    std::unique_lock lock(handles.mu);
    auto it = handles.queues.find(reinterpret_cast<const Queue*>(queue));
    if (it == handles.queues.end()) return failf(mtiaErrorInvalidHandle, "queueDestroy: {} is not a live queue", static_cast<void*>(queue));
    dropped = std::move(it->second);
    handles.queues.erase(it);
    lock.unlock();
    return mtiaSuccess;
  });
}

bool validDim(const mtiaDim3& d) { return d.x != 0 && d.y != 0 && d.z != 0; }

// Fills command from a kernel launch. Called with handles.mu held shared.
mtiaError_t prepareKernel(Machine& machine, const mtiaDrvCommand& cmd, Command& command) {
  const auto& k = cmd.u.kernel;
  const auto* kernel = reinterpret_cast<const Kernel*>(k.kernel);
  if (!isBuiltinKernel(kernel)) {
    Handles& handles = machine.handles();
    auto it = handles.kernels.find(kernel);
    if (it == handles.kernels.end()) {
      return failf(mtiaErrorInvalidHandle, "queueSubmit: {} is not a kernel of a loaded module", static_cast<const void*>(kernel));
    }
    command.module = it->second;
  }
  if (!validDim(k.grid) || !validDim(k.block)) {
    return failf(mtiaErrorInvalidValue, "queueSubmit: kernel '{}': grid ({}, {}, {}) and block ({}, {}, {}) must not be 0",
                 kernel->name, k.grid.x, k.grid.y, k.grid.z, k.block.x, k.block.y, k.block.z);
  }
  if (k.grid.x > 2147483647u || k.grid.y > 65535u || k.grid.z > 65535u) {
    return failf(mtiaErrorInvalidValue, "queueSubmit: kernel '{}': grid ({}, {}, {}) exceeds (2147483647, 65535, 65535)",
                 kernel->name, k.grid.x, k.grid.y, k.grid.z);
  }
  const uint64_t threads = uint64_t{k.block.x} * k.block.y * k.block.z;
  if (k.block.x > 1024 || k.block.y > 1024 || k.block.z > 64 || threads > kMaxBlockThreads) {
    return failf(mtiaErrorInvalidValue,
                 "queueSubmit: kernel '{}': block ({}, {}, {}) exceeds (1024, 1024, 64) or {} threads", kernel->name,
                 k.block.x, k.block.y, k.block.z, kMaxBlockThreads);
  }
  if (k.sharedMem > kMaxSharedMem) {
    return failf(mtiaErrorInvalidValue, "queueSubmit: kernel '{}': sharedMem {} exceeds {} bytes", kernel->name,
                 k.sharedMem, kMaxSharedMem);
  }
  if (kernel->numArgs > 0) {
    if (k.args == nullptr) {
      return failf(mtiaErrorInvalidValue, "queueSubmit: kernel '{}' takes {} arguments but args is NULL", kernel->name,
                   kernel->numArgs);
    }
    for (uint32_t i = 0; i < kernel->numArgs; ++i) {
      if (k.args[i] == nullptr) {
        return failf(mtiaErrorInvalidValue, "queueSubmit: kernel '{}': args[{}] is NULL", kernel->name, i);
      }
    }
  }
  command.kernel = kernel;
  command.args.assign(*kernel, k.args);
  command.injectFault = machine.faults().nextLaunchFaults(kernel->name);
  return mtiaSuccess;
}

bool rangeWraps(const void* p, uint64_t size) { return size > UINTPTR_MAX - reinterpret_cast<uintptr_t>(p); }

// Fills command from cmd. Called with handles.mu held shared.
mtiaError_t prepareCommand(Machine& machine, const mtiaDrvCommand& cmd, Command& command) {
  command.cmd = cmd;
  switch (cmd.type) {
    case mtiaDrvCmdKernel: return prepareKernel(machine, cmd, command);
    case mtiaDrvCmdCopy: {
      const auto& c = cmd.u.copy;
      if (c.size == 0) return mtiaSuccess;
      if (c.dst == nullptr || c.src == nullptr || rangeWraps(c.dst, c.size) || rangeWraps(c.src, c.size)) {
        return failf(mtiaErrorInvalidValue, "queueSubmit: copy of {} bytes from {} to {} is not valid", c.size, c.src, c.dst);
      }
      const auto d = reinterpret_cast<uintptr_t>(c.dst);
      const auto s = reinterpret_cast<uintptr_t>(c.src);
      if (d < s + c.size && s < d + c.size) {
        return failf(mtiaErrorInvalidValue, "queueSubmit: copy ranges overlap (src {}, dst {}, {} bytes)", c.src, c.dst,
                     c.size);
      }
      return mtiaSuccess;
    }
    case mtiaDrvCmdFill:
      if (cmd.u.fill.size != 0 && (cmd.u.fill.dst == nullptr || rangeWraps(cmd.u.fill.dst, cmd.u.fill.size))) {
        return failf(mtiaErrorInvalidValue, "queueSubmit: fill of {} bytes at {} is not valid", cmd.u.fill.size,
                     cmd.u.fill.dst);
      }
      return mtiaSuccess;
    case mtiaDrvCmdHostFunc:
      if (cmd.u.hostFunc.fn == nullptr) return nullArgument("queueSubmit", "hostFunc.fn");
      return mtiaSuccess;
    case mtiaDrvCmdWait: {
      auto it = machine.handles().queues.find(reinterpret_cast<const Queue*>(cmd.u.wait.queue));
      if (it == machine.handles().queues.end()) {
        return failf(mtiaErrorInvalidHandle, "queueSubmit: wait target {} is not a live queue",
                     static_cast<void*>(cmd.u.wait.queue));
      }
      // Only commands already submitted can be waited for, which also rules out cycles of waits.
      const uint64_t submitted = it->second->submitted();
      if (cmd.u.wait.value > submitted) {
        return failf(mtiaErrorInvalidValue, "queueSubmit: wait for command {} of a queue that has only {} submitted",
                     cmd.u.wait.value, submitted);
      }
      command.waitTarget = it->second;
      return mtiaSuccess;
    }
    case mtiaDrvCmdTimestamp:
      if (cmd.u.timestamp.out == nullptr) return nullArgument("queueSubmit", "timestamp.out");
      return mtiaSuccess;
    default:
      return failf(mtiaErrorInvalidValue, "queueSubmit: unknown command type {}", static_cast<int>(cmd.type));
  }
}

// Thread-safe and cheap: the queue's own lock, and the device's scheduler lock only when the queue was
// idle; never blocks on device work. Copies kernel argument values before returning. Errors:
// mtiaErrorInvalidValue (cmd or seq NULL, malformed command), mtiaErrorInvalidHandle (queue, kernel or
// wait target), mtiaErrorLaunchFailure (the device has a sticky fault).
mtiaError_t opQueueSubmit(mtiaDrvQueue queue, const mtiaDrvCommand* cmd, uint64_t* seq) {
  return guarded("queueSubmit", [&] {
    Machine* machine = nullptr;
    if (mtiaError_t err = machineFor("queueSubmit", machine); err != mtiaSuccess) return err;
    if (cmd == nullptr || seq == nullptr) return nullArgument("queueSubmit", "cmd and seq");
    Handles& handles = machine->handles();
    std::shared_lock lock(handles.mu);  // queue stays alive for the call
    auto it = handles.queues.find(reinterpret_cast<const Queue*>(queue));
    if (it == handles.queues.end()) {
      return failf(mtiaErrorInvalidHandle, "queueSubmit: {} is not a live queue", static_cast<void*>(queue));
    }
    Queue& q = *it->second;
    if (mtiaError_t err = q.device().status(); err != mtiaSuccess) return err;
    Command command;
    if (mtiaError_t err = prepareCommand(*machine, *cmd, command); err != mtiaSuccess) return err;
    *seq = q.submit(std::move(command));
    return mtiaSuccess;
  });
}

// Thread-safe, never blocks. Errors: mtiaErrorInvalidHandle, mtiaErrorInvalidValue (completed NULL).
mtiaError_t opQueueQuery(mtiaDrvQueue queue, uint64_t* completed) {
  return guarded("queueQuery", [&] {
    Machine* machine = nullptr;
    if (mtiaError_t err = machineFor("queueQuery", machine); err != mtiaSuccess) return err;
    if (completed == nullptr) return nullArgument("queueQuery", "completed");
    Handles& handles = machine->handles();
    std::shared_lock lock(handles.mu);
    auto it = handles.queues.find(reinterpret_cast<const Queue*>(queue));
    if (it == handles.queues.end()) {
      return failf(mtiaErrorInvalidHandle, "queueQuery: {} is not a live queue", static_cast<void*>(queue));
    }
    *completed = it->second->completed();
    return mtiaSuccess;
  });
}

// Thread-safe; blocks until command seq completed (MTIA_DRV_WAIT_SPIN polls and yields first,
// MTIA_DRV_WAIT_SLEEP sleeps at once). Errors: mtiaErrorInvalidHandle, mtiaErrorInvalidValue (unknown
// flags, seq not submitted yet), mtiaErrorNotPermitted (a host function of this device would wait for
// pending work of its own device), mtiaErrorLaunchFailure (the device's sticky fault).
mtiaError_t opQueueWait(mtiaDrvQueue queue, uint64_t seq, uint32_t flags) {
  return guarded("queueWait", [&] {
    Machine* machine = nullptr;
    if (mtiaError_t err = machineFor("queueWait", machine); err != mtiaSuccess) return err;
    if (flags != MTIA_DRV_WAIT_SPIN && flags != MTIA_DRV_WAIT_SLEEP) {
      return failf(mtiaErrorInvalidValue, "queueWait: unknown flags {:#x}", flags);
    }
    std::shared_ptr<Queue> q;
    {
      Handles& handles = machine->handles();
      std::shared_lock lock(handles.mu);
      auto it = handles.queues.find(reinterpret_cast<const Queue*>(queue));
      if (it == handles.queues.end()) {
        return failf(mtiaErrorInvalidHandle, "queueWait: {} is not a live queue", static_cast<void*>(queue));
      }
      q = it->second;
    }
    if (seq > q->submitted()) {
      return failf(mtiaErrorInvalidValue, "queueWait: command {} was never submitted (the queue has {})", seq,
                   q->submitted());
    }
    if (q->completed() < seq) {
      if (waitWouldBlockEngine(q->device())) {
        return failf(mtiaErrorNotPermitted, "queueWait: called from a host function of device {} for pending work",
                     q->device().index());
      }
      q->waitFor(seq, flags == MTIA_DRV_WAIT_SPIN);
    }
    return q->device().status();
  });
}

// ---- optional ----

// Thread-safe (per-thread message), works before init.
const char* opLastErrorMessage() { return lastErrorMessage(); }

// Thread-safe, works before init. Errors: mtiaErrorInvalidValue (ns NULL).
mtiaError_t opClockNow(uint64_t* ns) {
  if (ns == nullptr) return nullArgument("clockNow", "ns");
  *ns = monotonicNs();
  return mtiaSuccess;
}

// Thread-safe; blocks in dlopen. Errors: mtiaErrorInvalidValue (NULL), mtiaErrorNotFound (cannot load).
mtiaError_t opModuleLoad(const char* path, mtiaDrvModule* module) {
  return guarded("moduleLoad", [&] {
    Machine* machine = nullptr;
    if (mtiaError_t err = machineFor("moduleLoad", machine); err != mtiaSuccess) return err;
    if (path == nullptr || module == nullptr) return nullArgument("moduleLoad", "path and module");
    std::shared_ptr<Module> loaded;
    if (mtiaError_t err = Module::load(path, loaded); err != mtiaSuccess) return err;
    Handles& handles = machine->handles();
    std::unique_lock lock(handles.mu);
    const Module* raw = loaded.get();
    handles.modules.emplace(raw, std::move(loaded));
    *module = reinterpret_cast<mtiaDrvModule>(const_cast<Module*>(raw));
    return mtiaSuccess;
  });
}

// Thread-safe, returns at once; the shared object is closed when the last submitted kernel of the
// module completed. Its kernel handles become invalid. Errors: mtiaErrorInvalidHandle (NULL = the
// built-in module, or not a loaded module).
mtiaError_t opModuleUnload(mtiaDrvModule module) {
  return guarded("moduleUnload", [&] {
    Machine* machine = nullptr;
    if (mtiaError_t err = machineFor("moduleUnload", machine); err != mtiaSuccess) return err;
    Handles& handles = machine->handles();
    std::vector<std::shared_ptr<Module>> dropped;  // destroyed (maybe dlclose()d) after the lock
    std::unique_lock lock(handles.mu);
    auto it = handles.modules.find(reinterpret_cast<const Module*>(module));
    if (it == handles.modules.end()) {
      return failf(mtiaErrorInvalidHandle, "moduleUnload: {} is not a loaded module", static_cast<void*>(module));
    }
    dropped.push_back(std::move(it->second));
    handles.modules.erase(it);
    std::erase_if(handles.kernels, [&](auto& entry) {
      if (entry.second.get() != dropped.front().get()) return false;
      dropped.push_back(std::move(entry.second));
      return true;
    });
    lock.unlock();
    return mtiaSuccess;
  });
}

std::string builtinNames() {
  std::string names;
  for (const Kernel& kernel : builtinKernels()) names += (names.empty() ? "" : ", ") + kernel.name;
  return names;
}

// Thread-safe; the first lookup of a module kernel calls dlsym. Errors: mtiaErrorInvalidValue (NULL
// name or kernel, malformed argument descriptor), mtiaErrorInvalidHandle (module not loaded),
// mtiaErrorNotFound (no such kernel, or it lacks its NAME_mtia_args descriptor).
mtiaError_t opModuleGetKernel(mtiaDrvModule module, const char* name, mtiaDrvKernel* kernel) {
  return guarded("moduleGetKernel", [&] {
    Machine* machine = nullptr;
    if (mtiaError_t err = machineFor("moduleGetKernel", machine); err != mtiaSuccess) return err;
    if (name == nullptr || kernel == nullptr) return nullArgument("moduleGetKernel", "name and kernel");
    if (module == nullptr) {
      const Kernel* found = findBuiltinKernel(name);
      if (found == nullptr) {
        return failf(mtiaErrorNotFound, "moduleGetKernel: no built-in kernel '{}' (built-ins: {})", name, builtinNames());
      }
      *kernel = reinterpret_cast<mtiaDrvKernel>(const_cast<Kernel*>(found));
      return mtiaSuccess;
    }
    Handles& handles = machine->handles();
    std::shared_ptr<Module> owner;
    {
      std::shared_lock lock(handles.mu);
      auto it = handles.modules.find(reinterpret_cast<const Module*>(module));
      if (it == handles.modules.end()) {
        return failf(mtiaErrorInvalidHandle, "moduleGetKernel: {} is not a loaded module", static_cast<void*>(module));
      }
      owner = it->second;
    }
    Kernel* found = nullptr;
    if (mtiaError_t err = owner->getKernel(name, &found); err != mtiaSuccess) return err;
    std::unique_lock lock(handles.mu);
    if (handles.modules.find(owner.get()) == handles.modules.end()) {
      return failf(mtiaErrorInvalidHandle, "moduleGetKernel: module {} was unloaded meanwhile", static_cast<void*>(module));
    }
    handles.kernels.emplace(found, std::move(owner));
    *kernel = reinterpret_cast<mtiaDrvKernel>(found);
    return mtiaSuccess;
  });
}

// Thread-safe, never blocks. Writes all MTIA_DRIVER_MAX_KERNEL_ARGS entries of argSizes (0 past
// numArgs). Errors: mtiaErrorInvalidValue (NULL outputs), mtiaErrorInvalidHandle.
mtiaError_t opKernelGetInfo(mtiaDrvKernel kernel, uint32_t* numArgs, uint32_t* argSizes) {
  return guarded("kernelGetInfo", [&] {
    Machine* machine = nullptr;
    if (mtiaError_t err = machineFor("kernelGetInfo", machine); err != mtiaSuccess) return err;
    if (numArgs == nullptr || argSizes == nullptr) return nullArgument("kernelGetInfo", "numArgs and argSizes");
    const auto* k = reinterpret_cast<const Kernel*>(kernel);
    std::shared_lock lock(machine->handles().mu);  // a module kernel stays valid while we read it
    if (!isBuiltinKernel(k) && machine->handles().kernels.count(k) == 0) {
      return failf(mtiaErrorInvalidHandle, "kernelGetInfo: {} is not a kernel", static_cast<void*>(kernel));
    }
    *numArgs = k->numArgs;
    for (uint32_t i = 0; i < MTIA_DRIVER_MAX_KERNEL_ARGS; ++i) argSizes[i] = i < k->numArgs ? k->sizes[i] : 0;
    return mtiaSuccess;
  });
}

// Thread-safe; takes effect for kernels that start afterwards. Errors: mtiaErrorInvalidDevice (either
// device, or dev == peer), mtiaErrorInvalidValue (enable not 0 or 1).
mtiaError_t opDeviceSetPeerAccess(int32_t dev, int32_t peer, int32_t enable) {
  return guarded("deviceSetPeerAccess", [&] {
    Device* device = nullptr;
    Device* other = nullptr;
    if (mtiaError_t err = deviceFor("deviceSetPeerAccess", dev, device); err != mtiaSuccess) return err;
    if (mtiaError_t err = deviceFor("deviceSetPeerAccess", peer, other); err != mtiaSuccess) return err;
    if (dev == peer) return failf(mtiaErrorInvalidDevice, "deviceSetPeerAccess: device {} cannot be its own peer", dev);
    if (enable != 0 && enable != 1) {
      return failf(mtiaErrorInvalidValue, "deviceSetPeerAccess: enable must be 0 or 1, got {}", enable);
    }
    device->setPeerAccess(peer, enable == 1);
    return mtiaSuccess;
  });
}

// Thread-safe, lock-free: 1 on engine threads (which run kernels and host functions), else 0.
int32_t opIsDriverThread() { return Scheduler::onEngineThread() ? 1 : 0; }

constexpr mtiaDriverOps kOps = {
    .version = MTIA_DRIVER_API_VERSION,
    .structSize = sizeof(mtiaDriverOps),
    .init = opInit,
    .getName = opGetName,
    .deviceGetCount = opDeviceGetCount,
    .deviceGetInfo = opDeviceGetInfo,
    .deviceGetStatus = opDeviceGetStatus,
    .deviceSynchronize = opDeviceSynchronize,
    .memGetInfo = opMemGetInfo,
    .vaReserve = opVaReserve,
    .vaRelease = opVaRelease,
    .memCreate = opMemCreate,
    .memRelease = opMemRelease,
    .memMap = opMemMap,
    .memUnmap = opMemUnmap,
    .queueCreate = opQueueCreate,
    .queueDestroy = opQueueDestroy,
    .queueSubmit = opQueueSubmit,
    .queueQuery = opQueueQuery,
    .queueWait = opQueueWait,
    .lastErrorMessage = opLastErrorMessage,
    .clockNow = opClockNow,
    .moduleLoad = opModuleLoad,
    .moduleUnload = opModuleUnload,
    .moduleGetKernel = opModuleGetKernel,
    .kernelGetInfo = opKernelGetInfo,
    .deviceSetPeerAccess = opDeviceSetPeerAccess,
    .isDriverThread = opIsDriverThread,
};

}  // namespace
}  // namespace mtia::sim

// Thread-safe, works before init. Copies whole entries only: a structSize that ends inside a function
// pointer gets the entries before it. Errors: mtiaErrorNotSupported (another major version),
// mtiaErrorInvalidValue (ops NULL or structSize smaller than the version and size fields).
extern "C" mtiaError_t mtiaSimDriverGetOps(uint32_t apiVersion, mtiaDriverOps* ops) {
  using mtia::sim::failf;
  using mtia::sim::kOps;
  if (MTIA_DRIVER_API_MAJOR(apiVersion) != MTIA_DRIVER_API_VERSION_MAJOR) {
    return failf(mtiaErrorNotSupported, "mtiaDriverGetOps: the sim driver implements API {}.{}, not {}.{}",
                 MTIA_DRIVER_API_VERSION_MAJOR, MTIA_DRIVER_API_VERSION_MINOR, MTIA_DRIVER_API_MAJOR(apiVersion),
                 MTIA_DRIVER_API_MINOR(apiVersion));
  }
  if (ops == nullptr) return failf(mtiaErrorInvalidValue, "mtiaDriverGetOps: ops must not be NULL");
  constexpr size_t kHeader = offsetof(mtiaDriverOps, init);
  if (ops->structSize < kHeader) {
    return failf(mtiaErrorInvalidValue, "mtiaDriverGetOps: ops->structSize {} is smaller than the table header ({})",
                 ops->structSize, kHeader);
  }
  const size_t room = std::min<size_t>(ops->structSize, sizeof(mtiaDriverOps));
  const size_t bytes = kHeader + (room - kHeader) / sizeof(void*) * sizeof(void*);
  mtiaDriverOps filled = kOps;
  filled.structSize = static_cast<uint32_t>(bytes);
  std::memcpy(ops, &filled, bytes);
  return mtiaSuccess;
}
