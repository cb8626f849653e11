// The registry's IPC records (registry.hpp; reference/smi-topology-ipc.md 6.3).
//
// An exporter publishes export and event records in its own slot; an importer
// counts its opens of an export in its own slot. Nobody takes a lock: an
// exporter revoking an export stores the new state and then reads the
// importers' records, an importer stores its open and then reads the state
// again (both sequentially consistent), so at least one of the two sees the
// other. Records of dead processes are ignored: their slot's liveness lock is
// gone, so a killed importer releases its share at once.
#include "registry.hpp"

#include <cstring>

namespace mtia::registry {
namespace {

constexpr auto kSeq = std::memory_order_seq_cst;

}  // namespace

void clearIpcTables(Slot& slot) {
    for (ExportRecord& e : slot.exports) {
        e.state.store(static_cast<uint32_t>(ExportState::Free), std::memory_order_relaxed);
        e.generation.store(0, std::memory_order_relaxed);
    }
    for (ImportRecord& i : slot.imports) i.opens.store(0, std::memory_order_relaxed);
    for (EventRecord& e : slot.events) {
        e.state.store(static_cast<uint32_t>(EventState::Free), std::memory_order_relaxed);
        e.generation.store(0, std::memory_order_relaxed);
    }
}

Status Registry::exporterLive(const IpcRef& ref, uint32_t& pid) const {
    if (ref.slot >= header_->maxSlots)
        return Status::error(Code::InvalidArgument,
                             "exporter slot " + std::to_string(ref.slot) + " is beyond the " +
                                 std::to_string(header_->maxSlots) + " slots of registry " + name_);
    if (static_cast<int32_t>(ref.slot) == slot_.load(std::memory_order_acquire))
        return Status::error(Code::SelfImport, "the handle was exported by this process");
    const Slot& slot = slotAt(ref.slot);
    if (!alive(ref.slot) || slot.registeredNs != ref.registration)
        return Status::error(Code::Stale, "its exporting process has exited");
    pid = slot.pid;  // rewritten only by a new registration, which changes registeredNs too
    return Status::ok();
}

Status Registry::publishExport(const ExportInfo& info, IpcRef& out) {
    if (Status s = attach(); !s) return s;
    const uint32_t own = static_cast<uint32_t>(slot_.load(std::memory_order_acquire));
    Slot& slot = slotAt(own);
    std::lock_guard lock(ipcMu_);
    for (uint32_t i = 0; i < kIpcExports; ++i) {
        ExportRecord& e = slot.exports[i];
        if (e.state.load(std::memory_order_relaxed) != static_cast<uint32_t>(ExportState::Free))
            continue;
        const uint64_t generation = nextGeneration();
        // The writer's half of findExport's seqlock read: the generation 0 of the record's release
        // is visible before any field rewritten below, so a reader that sees a new field sees a new
        // generation. (ThreadSanitizer models no fences and GCC refuses them under it; the fields
        // are atomics there.)
#if !defined(__SANITIZE_THREAD__)
        std::atomic_thread_fence(std::memory_order_release);
#endif
        e.device.store(info.device, std::memory_order_relaxed);
        e.fileOffset.store(info.fileOffset, std::memory_order_relaxed);
        e.size.store(info.size, std::memory_order_relaxed);
        e.fileDev.store(info.fileDev, std::memory_order_relaxed);
        e.fileIno.store(info.fileIno, std::memory_order_relaxed);
        e.fd.store(info.fd, std::memory_order_relaxed);
        e.generation.store(generation, std::memory_order_relaxed);
        e.state.store(static_cast<uint32_t>(ExportState::Live), kSeq);
        out = IpcRef{own, i, slot.registeredNs, generation};
        return Status::ok();
    }
    return Status::error(Code::TableFull,
                         "this process already has " + std::to_string(kIpcExports) +
                             " exported allocations (the most a process may have; free some)");
}

Status Registry::revokeExport(const IpcRef& ref, uint32_t& openers) {
    refreshAfterFork();
    const int32_t own = slot_.load(std::memory_order_acquire);
    if (own < 0 || ref.slot != static_cast<uint32_t>(own) || ref.index >= kIpcExports)
        return Status::error(Code::InvalidArgument, "not an export of this process");
    ExportRecord& e = slotAt(ref.slot).exports[ref.index];
    if (e.generation.load(std::memory_order_relaxed) != ref.generation ||
        e.state.load(std::memory_order_relaxed) == static_cast<uint32_t>(ExportState::Free))
        return Status::error(Code::InvalidArgument, "the export was released already");
    e.state.store(static_cast<uint32_t>(ExportState::Revoked), kSeq);
    openers = 0;
    for (uint32_t s = 0; s < header_->maxSlots; ++s) {
        if (s == ref.slot) continue;
        const Slot& other = slotAt(s);
        bool holds = false;
        for (const ImportRecord& r : other.imports) {
            if (r.opens.load(kSeq) == 0) continue;
            if (r.exporterSlot.load(std::memory_order_relaxed) == ref.slot &&
                r.exportIndex.load(std::memory_order_relaxed) == ref.index &&
                r.generation.load(std::memory_order_relaxed) == ref.generation &&
                r.exporterRegistration.load(std::memory_order_relaxed) == ref.registration) {
                holds = true;
                break;
            }
        }
        // A dead importer's records count for nothing: its mappings died with it.
        if (holds && alive(s)) ++openers;
    }
    if (openers == 0) {
        std::lock_guard lock(ipcMu_);
        e.generation.store(0, std::memory_order_relaxed);
        e.state.store(static_cast<uint32_t>(ExportState::Free), std::memory_order_release);
    }
    return Status::ok();
}

Status Registry::findExport(const IpcRef& ref, ExportInfo& out) {
    refreshAfterFork();
    uint32_t pid = 0;
    if (Status s = exporterLive(ref, pid); !s) return s;
    if (ref.index >= kIpcExports)
        return Status::error(Code::InvalidArgument,
                             "export index " + std::to_string(ref.index) + " is out of range");
    const ExportRecord& e = slotAt(ref.slot).exports[ref.index];
    const uint32_t state = e.state.load(kSeq);
    if (e.generation.load(std::memory_order_acquire) != ref.generation ||
        state != static_cast<uint32_t>(ExportState::Live))
        return Status::error(Code::Stale,
                             "its allocation was freed by the exporting process (pid " +
                                 std::to_string(pid) + ")");
    out.device = e.device.load(std::memory_order_relaxed);
    out.fileOffset = e.fileOffset.load(std::memory_order_relaxed);
    out.size = e.size.load(std::memory_order_relaxed);
    out.fileDev = e.fileDev.load(std::memory_order_relaxed);
    out.fileIno = e.fileIno.load(std::memory_order_relaxed);
    out.fd = e.fd.load(std::memory_order_relaxed);
    out.pid = pid;
    // Read again: a reuse of the record in between would have changed the generation. The fence
    // keeps the relaxed field loads above from being performed after this load (a seqlock reader's
    // order; x86 keeps it anyway, weakly ordered CPUs need the fence).
#if !defined(__SANITIZE_THREAD__)
    std::atomic_thread_fence(std::memory_order_acquire);
#endif
    if (e.generation.load(kSeq) != ref.generation)
        return Status::error(Code::Stale,
                             "its allocation was freed by the exporting process (pid " +
                                 std::to_string(pid) + ")");
    return Status::ok();
}

Status Registry::addImport(const IpcRef& ref, uint32_t& importIndex, uint32_t& opens) {
    if (Status s = attach(); !s) return s;
    ExportInfo ignored;
    if (Status s = findExport(ref, ignored); !s) return s;
    Slot& mine = slotAt(static_cast<uint32_t>(slot_.load(std::memory_order_acquire)));
    std::lock_guard lock(ipcMu_);
    int32_t found = -1;
    int32_t free = -1;
    for (uint32_t i = 0; i < kIpcImports; ++i) {
        const ImportRecord& r = mine.imports[i];
        if (r.opens.load(std::memory_order_relaxed) == 0) {
            if (free < 0) free = static_cast<int32_t>(i);
            continue;
        }
        if (r.exporterSlot.load(std::memory_order_relaxed) == ref.slot &&
            r.exportIndex.load(std::memory_order_relaxed) == ref.index &&
            r.generation.load(std::memory_order_relaxed) == ref.generation &&
            r.exporterRegistration.load(std::memory_order_relaxed) == ref.registration) {
            found = static_cast<int32_t>(i);
            break;
        }
    }
    if (found >= 0) {
        // Already open here: the exporter counts this process already, but a revoked export takes
        // no new opens, even here.
        ImportRecord& r = mine.imports[found];
        r.opens.fetch_add(1, kSeq);
        if (Status s = findExport(ref, ignored); !s) {
            r.opens.fetch_sub(1, kSeq);
            return s;
        }
        importIndex = static_cast<uint32_t>(found);
        opens = r.opens.load(std::memory_order_relaxed);
        return Status::ok();
    }
    if (free < 0)
        return Status::error(Code::TableFull,
                             "this process already has " + std::to_string(kIpcImports) +
                                 " IPC allocations of other processes open (the most a process may "
                                 "have; close some)");
    ImportRecord& r = mine.imports[free];
    r.exporterSlot.store(ref.slot, std::memory_order_relaxed);
    r.exportIndex.store(ref.index, std::memory_order_relaxed);
    r.generation.store(ref.generation, std::memory_order_relaxed);
    r.exporterRegistration.store(ref.registration, std::memory_order_relaxed);
    r.opens.store(1, kSeq);
    // The exporter may have revoked before seeing our record: look again.
    if (Status s = findExport(ref, ignored); !s) {
        r.opens.store(0, kSeq);
        return s;
    }
    importIndex = static_cast<uint32_t>(free);
    opens = 1;
    return Status::ok();
}

uint32_t Registry::dropImport(uint32_t importIndex) {
    refreshAfterFork();
    const int32_t own = slot_.load(std::memory_order_acquire);
    if (own < 0 || importIndex >= kIpcImports) return 0;
    std::lock_guard lock(ipcMu_);
    ImportRecord& r = slotAt(static_cast<uint32_t>(own)).imports[importIndex];
    const uint32_t now = r.opens.load(std::memory_order_relaxed);
    if (now == 0) return 0;
    r.opens.store(now - 1, kSeq);
    return now - 1;
}

Status Registry::publishEvent(uint32_t device, IpcRef& out, EventRecord*& record) {
    if (Status s = attach(); !s) return s;
    const uint32_t own = static_cast<uint32_t>(slot_.load(std::memory_order_acquire));
    Slot& slot = slotAt(own);
    std::lock_guard lock(ipcMu_);
    for (uint32_t i = 0; i < kIpcEvents; ++i) {
        EventRecord& e = slot.events[i];
        // A destroyed event's record is reused under a new generation, which its importers tell
        // apart.
        if (e.state.load(std::memory_order_relaxed) == static_cast<uint32_t>(EventState::Live))
            continue;
        const uint64_t generation = nextGeneration();
        e.recorded.store(0, std::memory_order_relaxed);
        e.completed.store(0, std::memory_order_relaxed);
        for (std::atomic<uint64_t>& r : e.recent) r.store(0, std::memory_order_relaxed);
        e.device.store(device, std::memory_order_relaxed);
        e.generation.store(generation, std::memory_order_relaxed);
        e.state.store(static_cast<uint32_t>(EventState::Live), std::memory_order_release);
        out = IpcRef{own, i, slot.registeredNs, generation};
        record = &e;
        return Status::ok();
    }
    return Status::error(Code::TableFull,
                         "this process already has " + std::to_string(kIpcEvents) +
                             " exported interprocess events (the most a process may have)");
}

Status Registry::findEvent(const IpcRef& ref, EventRecord*& record, uint32_t* pidOut) {
    refreshAfterFork();
    if (Status s = attach(); !s) return s;
    uint32_t pid = 0;
    if (Status s = exporterLive(ref, pid); !s) return s;
    if (pidOut != nullptr) *pidOut = pid;
    if (ref.index >= kIpcEvents)
        return Status::error(Code::InvalidArgument,
                             "event index " + std::to_string(ref.index) + " is out of range");
    EventRecord& e = slotAt(ref.slot).events[ref.index];
    if (e.generation.load(std::memory_order_acquire) != ref.generation ||
        e.state.load(std::memory_order_acquire) != static_cast<uint32_t>(EventState::Live))
        return Status::error(Code::Stale, "the event was destroyed by its exporting process (pid " +
                                              std::to_string(pid) + ")");
    record = &e;
    return Status::ok();
}

bool Registry::eventAlive(const IpcRef& ref) const {
    refreshAfterFork();
    if (ref.slot >= header_->maxSlots || ref.index >= kIpcEvents) return false;
    const Slot& slot = slotAt(ref.slot);
    const EventRecord& e = slot.events[ref.index];
    if (e.generation.load(std::memory_order_acquire) != ref.generation ||
        e.state.load(std::memory_order_acquire) != static_cast<uint32_t>(EventState::Live))
        return false;
    if (static_cast<int32_t>(ref.slot) == slot_.load(std::memory_order_acquire)) return true;
    return alive(ref.slot) && slot.registeredNs == ref.registration;
}

void Registry::killEvent(const IpcRef& ref) {
    refreshAfterFork();
    const int32_t own = slot_.load(std::memory_order_acquire);
    if (own < 0 || ref.slot != static_cast<uint32_t>(own) || ref.index >= kIpcEvents) return;
    std::lock_guard lock(ipcMu_);
    EventRecord& e = slotAt(ref.slot).events[ref.index];
    if (e.generation.load(std::memory_order_relaxed) != ref.generation) return;
    // Dead, then the futex word: a waiter woken by the driver sees why.
    e.state.store(static_cast<uint32_t>(EventState::Dead), kSeq);
    e.wake.fetch_add(1, kSeq);
}

}  // namespace mtia::registry
