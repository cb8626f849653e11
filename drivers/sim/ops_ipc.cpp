// Entries about interprocess memory and events (driver ABI 1.4).
#include "ipc.hpp"
#include "ops_common.hpp"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>

namespace mtia::sim::ops {
namespace {

mtiaError_t fromRegistry(const char* entry, const registry::Status& s) {
    mtiaError_t code = mtiaErrorUnknown;
    switch (s.code) {
    case registry::Code::Stale:
    case registry::Code::InvalidArgument: code = mtiaErrorInvalidHandle; break;
    case registry::Code::SelfImport: code = mtiaErrorInvalidValue; break;
    case registry::Code::TableFull:
    case registry::Code::SlotsExhausted:
    case registry::Code::NoSpace: code = mtiaErrorMemoryAllocation; break;
    case registry::Code::Permission: code = mtiaErrorNotPermitted; break;
    default: code = mtiaErrorInitializationError; break;
    }
    return reportErrorf(code, "{}: {}", entry, s.message);
}

struct Context {
    Machine* machine = nullptr;
    registry::Registry* registry = nullptr;
    uint32_t machineId = 0;
};

mtiaError_t contextFor(const char* entry, Context& c) {
    if (mtiaError_t err = machineFor(entry, c.machine); err != mtiaSuccess) return err;
    if (mtiaError_t err = c.machine->registry().open(c.registry); err != mtiaSuccess) return err;
    c.machineId = machineHash(c.registry->name());
    return mtiaSuccess;
}

IpcDescriptor describe(IpcKind kind, uint32_t machineId, const registry::IpcRef& ref) {
    IpcDescriptor d{};
    d.magic = kIpcMagic;
    d.version = kIpcVersion;
    d.kind = static_cast<uint16_t>(kind);
    d.uid = geteuid();
    d.machine = machineId;
    d.slot = ref.slot;
    d.index = ref.index;
    d.registration = ref.registration;
    d.generation = ref.generation;
    return d;
}

// The exporter's memory file, reopened through /proc (PTRACE_MODE_READ: allowed for the same user
// under Yama ptrace_scope 1), or else copied with pidfd_getfd; the inode must be the one the
// exporter published.
mtiaError_t openExporterFile(const registry::ExportInfo& info, int& fd) {
    const std::string path = "/proc/" + std::to_string(info.pid) + "/fd/" + std::to_string(info.fd);
    fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
    int openErr = fd < 0 ? errno : 0;
    if (fd < 0 && (openErr == EACCES || openErr == EPERM)) {
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_getfd)
        const int pidfd =
            static_cast<int>(syscall(SYS_pidfd_open, static_cast<pid_t>(info.pid), 0));
        if (pidfd >= 0) {
            fd = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, info.fd, 0));
            close(pidfd);
        }
#endif
    }
    if (fd < 0) {
        if (openErr == ENOENT || openErr == ESRCH)
            return reportErrorf(mtiaErrorInvalidHandle,
                                "ipcMemOpen: the exporting process (pid {}) has exited", info.pid);
        return reportErrorf(
            mtiaErrorNotSupported,
            "ipcMemOpen: cannot reach the exporting process's device memory ({}: {}; pidfd_getfd "
            "refused too): "
            "the processes must run as the same user with ptrace access (see docs/abi.md, IPC)",
            path, std::strerror(openErr));
    }
    struct stat st {};
    if (fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_dev) != info.fileDev ||
        static_cast<uint64_t>(st.st_ino) != info.fileIno) {
        close(fd);
        return reportErrorf(mtiaErrorInvalidHandle,
                            "ipcMemOpen: descriptor {} of the exporting process (pid {}) is no "
                            "longer its device memory file",
                            info.fd, info.pid);
    }
    return mtiaSuccess;
}

int futexWait(std::atomic<uint32_t>* word, uint32_t expected, uint64_t ns) {
    timespec ts{static_cast<time_t>(ns / 1000000000u), static_cast<long>(ns % 1000000000u)};
    // Non-private: the word is in the registry, shared with other processes.
    return static_cast<int>(syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT,
                                    expected, &ts, nullptr, 0));
}

void futexWakeAll(std::atomic<uint32_t>* word) {
    (void)syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT32_MAX, nullptr,
                  nullptr, 0);
}

mtiaError_t eventFor(const char* entry, Machine& machine, mtiaDrvIpcEvent event, IpcEvent*& out) {
    IpcState& ipc = machine.ipc();
    auto lock = ipc.lock();
    auto it = ipc.events.find(reinterpret_cast<const IpcEvent*>(event));
    if (it == ipc.events.end())
        return reportErrorf(mtiaErrorInvalidHandle, "{}: {} is not a live IPC event", entry,
                            static_cast<void*>(event));
    out = it->second.get();
    return mtiaSuccess;
}

mtiaError_t destroyed(const char* entry, const IpcEvent& e) {
    return reportErrorf(
        mtiaErrorInvalidHandle,
        "{}: the IPC event was destroyed by its exporting process (pid {}), or that process exited",
        entry, e.exporterPid);
}

}  // namespace

// Thread-safe, never blocks. Errors: see mtia_driver.h.
mtiaError_t ipcMemExport(mtiaDrvMem mem, uint64_t offset, uint64_t size,
                         mtiaDrvIpcDescriptor* desc) {
    return guarded("ipcMemExport", [&] {
        Context c;
        if (mtiaError_t err = contextFor("ipcMemExport", c); err != mtiaSuccess) return err;
        if (desc == nullptr) return nullArgument("ipcMemExport", "desc");
        registry::ExportInfo info;
        {
            Handles& handles = c.machine->handles();
            std::lock_guard lock(handles.memMu);
            auto it = handles.mems.find(reinterpret_cast<const PhysicalMemory*>(mem));
            if (it == handles.mems.end())
                return reportErrorf(mtiaErrorInvalidHandle,
                                    "ipcMemExport: {} is not a live memory handle",
                                    static_cast<void*>(mem));
            if (mtiaError_t err = it->second->owner->exportRange(*it->second, offset, size, info);
                err != mtiaSuccess)
                return err;
        }
        registry::IpcRef ref;
        if (registry::Status s = c.registry->publishExport(info, ref); !s)
            return fromRegistry("ipcMemExport", s);
        pack(describe(IpcKind::Memory, c.machineId, ref), *desc);
        return mtiaSuccess;
    });
}

// Thread-safe, never blocks. Errors: mtiaErrorInvalidValue (not a live export of this process).
mtiaError_t ipcMemRevoke(const mtiaDrvIpcDescriptor* desc, uint32_t* openers) {
    return guarded("ipcMemRevoke", [&] {
        Context c;
        if (mtiaError_t err = contextFor("ipcMemRevoke", c); err != mtiaSuccess) return err;
        if (desc == nullptr || openers == nullptr)
            return nullArgument("ipcMemRevoke", "desc and openers");
        IpcDescriptor d;
        if (mtiaError_t err = unpack("ipcMemRevoke", desc, IpcKind::Memory, c.machineId, d);
            err != mtiaSuccess)
            return err;
        if (registry::Status s = c.registry->revokeExport(refOf(d), *openers); !s)
            return reportErrorf(mtiaErrorInvalidValue, "ipcMemRevoke: {}", s.message);
        return mtiaSuccess;
    });
}

// Thread-safe; opens a file and maps it (no waiting on device work). Errors: see mtia_driver.h.
mtiaError_t ipcMemOpen(const mtiaDrvIpcDescriptor* desc, uint32_t flags, void** va, int32_t* dev) {
    return guarded("ipcMemOpen", [&] {
        Context c;
        if (mtiaError_t err = contextFor("ipcMemOpen", c); err != mtiaSuccess) return err;
        if (desc == nullptr || va == nullptr || dev == nullptr)
            return nullArgument("ipcMemOpen", "desc, va and dev");
        if (flags != 0)
            return reportErrorf(mtiaErrorInvalidValue, "ipcMemOpen: flags 0x{:x} must be 0", flags);
        IpcDescriptor d;
        if (mtiaError_t err = unpack("ipcMemOpen", desc, IpcKind::Memory, c.machineId, d);
            err != mtiaSuccess)
            return err;
        const registry::IpcRef ref = refOf(d);
        IpcState& ipc = c.machine->ipc();
        auto lock = ipc.lock();
        if (auto it = ipc.imports.find(IpcState::keyOf(ref)); it != ipc.imports.end()) {
            uint32_t index = 0, opens = 0;
            if (registry::Status s = c.registry->addImport(ref, index, opens); !s)
                return fromRegistry("ipcMemOpen", s);
            it->second.opens = opens;
            *va = it->second.va;
            *dev = it->second.device;
            return mtiaSuccess;
        }
        registry::ExportInfo info;
        if (registry::Status s = c.registry->findExport(ref, info); !s)
            return fromRegistry("ipcMemOpen", s);
        Device* device = c.machine->device(static_cast<int32_t>(info.device));
        if (device == nullptr)
            return reportErrorf(mtiaErrorInvalidHandle,
                                "ipcMemOpen: the handle names device {}, which this machine lacks",
                                info.device);
        // Recorded before mapping: the exporter, once it sees the record, keeps the memory.
        uint32_t index = 0, opens = 0;
        if (registry::Status s = c.registry->addImport(ref, index, opens); !s)
            return fromRegistry("ipcMemOpen", s);
        int fd = -1;
        mtiaError_t err = openExporterFile(info, fd);
        void* mapped = nullptr;
        if (err == mtiaSuccess) {
            err = device->memory().mapImport(fd, info.fileOffset, info.size, &mapped);
            close(fd);
        }
        if (err != mtiaSuccess) {
            c.registry->dropImport(index);
            return err;
        }
        ipc.imports.emplace(IpcState::keyOf(ref),
                            IpcImport{mapped, info.size, device->index(), index, opens});
        ipc.importsByAddress.emplace(reinterpret_cast<uintptr_t>(mapped), IpcState::keyOf(ref));
        *va = mapped;
        *dev = device->index();
        return mtiaSuccess;
    });
}

// Thread-safe. Errors: mtiaErrorInvalidValue (va is not an open import).
mtiaError_t ipcMemClose(void* va) {
    return guarded("ipcMemClose", [&] {
        Context c;
        if (mtiaError_t err = contextFor("ipcMemClose", c); err != mtiaSuccess) return err;
        IpcState& ipc = c.machine->ipc();
        auto lock = ipc.lock();
        auto at = ipc.importsByAddress.find(reinterpret_cast<uintptr_t>(va));
        if (at == ipc.importsByAddress.end())
            return reportErrorf(mtiaErrorInvalidValue, "ipcMemClose: {} is not an open IPC mapping",
                                va);
        auto it = ipc.imports.find(at->second);
        IpcImport& imp = it->second;
        imp.opens = c.registry->dropImport(imp.importIndex);
        if (imp.opens > 0) return mtiaSuccess;
        const mtiaError_t err = c.machine->device(imp.device)->memory().unmapImport(imp.va);
        ipc.importsByAddress.erase(at);
        ipc.imports.erase(it);
        return err;
    });
}

// Thread-safe, never blocks. Errors: mtiaErrorInvalidValue (va is not an open import).
mtiaError_t ipcMemSize(void* va, uint64_t* size) {
    return guarded("ipcMemSize", [&] {
        Machine* machine = nullptr;
        if (mtiaError_t err = machineFor("ipcMemSize", machine); err != mtiaSuccess) return err;
        if (size == nullptr) return nullArgument("ipcMemSize", "size");
        IpcState& ipc = machine->ipc();
        auto lock = ipc.lock();
        auto at = ipc.importsByAddress.find(reinterpret_cast<uintptr_t>(va));
        if (at == ipc.importsByAddress.end())
            return reportErrorf(mtiaErrorInvalidValue, "ipcMemSize: {} is not an open IPC mapping",
                                va);
        *size = ipc.imports.at(at->second).size;
        return mtiaSuccess;
    });
}

// Thread-safe, never blocks.
mtiaError_t ipcEventExport(int32_t dev, mtiaDrvIpcDescriptor* desc, mtiaDrvIpcEvent* event) {
    return guarded("ipcEventExport", [&] {
        Device* device = nullptr;
        if (mtiaError_t err = deviceFor("ipcEventExport", dev, device); err != mtiaSuccess)
            return err;
        Context c;
        if (mtiaError_t err = contextFor("ipcEventExport", c); err != mtiaSuccess) return err;
        if (desc == nullptr || event == nullptr)
            return nullArgument("ipcEventExport", "desc and event");
        auto created = std::make_unique<IpcEvent>();
        created->exporter = true;
        created->device = dev;
        if (registry::Status s =
                c.registry->publishEvent(static_cast<uint32_t>(dev), created->ref, created->record);
            !s)
            return fromRegistry("ipcEventExport", s);
        pack(describe(IpcKind::Event, c.machineId, created->ref), *desc);
        IpcState& ipc = c.machine->ipc();
        auto lock = ipc.lock();
        *event = reinterpret_cast<mtiaDrvIpcEvent>(created.get());
        ipc.events.emplace(created.get(), std::move(created));
        return mtiaSuccess;
    });
}

// Thread-safe, never blocks.
mtiaError_t ipcEventOpen(const mtiaDrvIpcDescriptor* desc, mtiaDrvIpcEvent* event, int32_t* dev) {
    return guarded("ipcEventOpen", [&] {
        Context c;
        if (mtiaError_t err = contextFor("ipcEventOpen", c); err != mtiaSuccess) return err;
        if (desc == nullptr || event == nullptr || dev == nullptr)
            return nullArgument("ipcEventOpen", "desc, event and dev");
        IpcDescriptor d;
        if (mtiaError_t err = unpack("ipcEventOpen", desc, IpcKind::Event, c.machineId, d);
            err != mtiaSuccess)
            return err;
        auto created = std::make_unique<IpcEvent>();
        created->ref = refOf(d);
        if (registry::Status s =
                c.registry->findEvent(created->ref, created->record, &created->exporterPid);
            !s)
            return fromRegistry("ipcEventOpen", s);
        // The exporter's device; the machine is the same, so it exists here too.
        const uint32_t device = created->record->device.load(std::memory_order_relaxed);
        if (c.machine->device(static_cast<int32_t>(device)) == nullptr)
            return reportErrorf(
                mtiaErrorInvalidHandle,
                "ipcEventOpen: the handle names device {}, which this machine lacks", device);
        created->device = static_cast<int32_t>(device);
        IpcState& ipc = c.machine->ipc();
        auto lock = ipc.lock();
        *event = reinterpret_cast<mtiaDrvIpcEvent>(created.get());
        *dev = created->device;
        ipc.events.emplace(created.get(), std::move(created));
        return mtiaSuccess;
    });
}

// Thread-safe, never blocks. Errors: mtiaErrorInvalidHandle.
mtiaError_t ipcEventClose(mtiaDrvIpcEvent event) {
    return guarded("ipcEventClose", [&] {
        Context c;
        if (mtiaError_t err = contextFor("ipcEventClose", c); err != mtiaSuccess) return err;
        IpcState& ipc = c.machine->ipc();
        std::unique_ptr<IpcEvent> closed;
        {
            auto lock = ipc.lock();
            auto it = ipc.events.find(reinterpret_cast<const IpcEvent*>(event));
            if (it == ipc.events.end())
                return reportErrorf(mtiaErrorInvalidHandle,
                                    "ipcEventClose: {} is not a live IPC event",
                                    static_cast<void*>(event));
            closed = std::move(it->second);
            ipc.events.erase(it);
        }
        if (closed->exporter) {
            c.registry->killEvent(closed->ref);
            futexWakeAll(&closed->record->wake);
        }
        return mtiaSuccess;
    });
}

// Thread-safe, never blocks. Errors: mtiaErrorInvalidHandle, mtiaErrorNotSupported (an opened
// event).
mtiaError_t ipcEventRecord(mtiaDrvIpcEvent event, uint64_t* ticket) {
    return guarded("ipcEventRecord", [&] {
        Machine* machine = nullptr;
        if (mtiaError_t err = machineFor("ipcEventRecord", machine); err != mtiaSuccess) return err;
        IpcEvent* e = nullptr;
        if (mtiaError_t err = eventFor("ipcEventRecord", *machine, event, e); err != mtiaSuccess)
            return err;
        if (ticket == nullptr) return nullArgument("ipcEventRecord", "ticket");
        if (!e->exporter)
            return reportErrorf(mtiaErrorNotSupported,
                                "ipcEventRecord: only the exporting process records an IPC event");
        *ticket = e->record->recorded.fetch_add(1, std::memory_order_seq_cst) + 1;
        return mtiaSuccess;
    });
}

// Thread-safe, never blocks (called from host functions). Errors: mtiaErrorInvalidHandle.
mtiaError_t ipcEventComplete(mtiaDrvIpcEvent event, uint64_t ticket) {
    return guarded("ipcEventComplete", [&] {
        Machine* machine = nullptr;
        if (mtiaError_t err = machineFor("ipcEventComplete", machine); err != mtiaSuccess)
            return err;
        IpcEvent* e = nullptr;
        if (mtiaError_t err = eventFor("ipcEventComplete", *machine, event, e); err != mtiaSuccess)
            return err;
        if (!e->exporter)
            return reportErrorf(
                mtiaErrorNotSupported,
                "ipcEventComplete: only the exporting process completes an IPC event");
        {
            // Only this process completes its tickets: the shared figures move under a local lock.
            // completed advances only across tickets that all completed (a later record on a faster
            // stream does not complete an earlier one); the tickets completed ahead of it are kept
            // here, however many, and recent tells importers of the latest of them.
            std::lock_guard lock(e->completeMu);
            e->record->recent[ticket % registry::kRecentTickets].store(ticket,
                                                                       std::memory_order_seq_cst);
            std::atomic<uint64_t>& done = e->record->completed;
            uint64_t completed = done.load(std::memory_order_relaxed);
            if (ticket <= completed) return mtiaSuccess;
            if (ticket != completed + 1) {
                e->doneAhead.insert(ticket);
            } else {
                ++completed;
                while (!e->doneAhead.empty() && *e->doneAhead.begin() == completed + 1) {
                    e->doneAhead.erase(e->doneAhead.begin());
                    ++completed;
                }
                done.store(completed, std::memory_order_seq_cst);
            }
        }
        e->record->wake.fetch_add(1, std::memory_order_seq_cst);
        futexWakeAll(&e->record->wake);
        return mtiaSuccess;
    });
}

// Thread-safe, never blocks. Errors: mtiaErrorInvalidHandle (also: destroyed, or the exporter
// exited).
mtiaError_t ipcEventLatest(mtiaDrvIpcEvent event, uint64_t* ticket) {
    return guarded("ipcEventLatest", [&] {
        Machine* machine = nullptr;
        if (mtiaError_t err = machineFor("ipcEventLatest", machine); err != mtiaSuccess) return err;
        IpcEvent* e = nullptr;
        if (mtiaError_t err = eventFor("ipcEventLatest", *machine, event, e); err != mtiaSuccess)
            return err;
        if (ticket == nullptr) return nullArgument("ipcEventLatest", "ticket");
        registry::Registry* registry = nullptr;
        if (mtiaError_t err = machine->registry().open(registry); err != mtiaSuccess) return err;
        // The record may have been reused for another event since: alive before and after the read.
        if (!registry->eventAlive(e->ref)) return destroyed("ipcEventLatest", *e);
        const uint64_t latest = e->record->recorded.load(std::memory_order_seq_cst);
        if (!registry->eventAlive(e->ref)) return destroyed("ipcEventLatest", *e);
        *ticket = latest;
        return mtiaSuccess;
    });
}

// Thread-safe; blocks up to timeoutNs, checking every 50 ms that the exporter is alive and the
// event not destroyed. Errors: mtiaErrorInvalidHandle (destroyed or exporter exited),
// mtiaErrorNotReady (timeout).
mtiaError_t ipcEventWait(mtiaDrvIpcEvent event, uint64_t ticket, uint64_t timeoutNs) {
    return guarded("ipcEventWait", [&] {
        Context c;
        if (mtiaError_t err = contextFor("ipcEventWait", c); err != mtiaSuccess) return err;
        IpcEvent* e = nullptr;
        if (mtiaError_t err = eventFor("ipcEventWait", *c.machine, event, e); err != mtiaSuccess)
            return err;
        registry::EventRecord& r = *e->record;
        const auto start = std::chrono::steady_clock::now();
        constexpr uint64_t kSlice = 50'000'000;
        for (;;) {
            const uint32_t word = r.wake.load(std::memory_order_seq_cst);
            // Alive first, and again after reading the counters: a destroyed event's record may be
            // reused by a new event, whose counters say nothing of this one's records.
            if (!c.registry->eventAlive(e->ref)) return destroyed("ipcEventWait", *e);
            const bool done = r.completed.load(std::memory_order_seq_cst) >= ticket ||
                              r.recent[ticket % registry::kRecentTickets].load(
                                  std::memory_order_seq_cst) == ticket;
            if (!c.registry->eventAlive(e->ref)) return destroyed("ipcEventWait", *e);
            if (done) return mtiaSuccess;
            const uint64_t waited =
                static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                          std::chrono::steady_clock::now() - start)
                                          .count());
            if (waited >= timeoutNs)
                return reportErrorf(mtiaErrorNotReady, "ipcEventWait: record {} has not completed",
                                    ticket);
            futexWait(&r.wake, word, std::min(kSlice, timeoutNs - waited));
        }
    });
}

}  // namespace mtia::sim::ops
