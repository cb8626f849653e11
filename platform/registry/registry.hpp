// The cross-process device registry of one simulated machine (DESIGN.md
// "The cross-process registry"; reference/smi-topology-ipc.md section 4).
//
// A process registers lazily (first reserve or attach) and then owns one
// slot, which only it writes. Capacity is reserved under the robust admission
// mutex against the sum over live slots; releases, allocator figures and
// busy time are lock-free atomic updates. Readers take no lock: a slot counts
// when its owner still holds the slot's byte lock in the lock file, so the
// memory of a killed process is free again at once, with nothing to repair.
//
// Thread safety: every member may be called from any thread. Blocking: open,
// attach and reserve may wait up to Options::lockTimeout for a lock held by a
// live process; the rest never block.
#pragma once

#include "fork_guard.hpp"
#include "layout.hpp"
#include "lock_file.hpp"
#include "machine_name.hpp"
#include "request_watcher.hpp"
#include "status.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace mtia::registry {

// The mapped object (shared_object.hpp): held by pointer so that this header, which the simulated
// driver and the management library include, does not pull in Boost.Interprocess.
struct MappedObject;

struct DeviceFigures {
    uint64_t reserved = 0;
    uint64_t allocated = 0;
    uint64_t peakReserved = 0;
    uint64_t peakAllocated = 0;
    uint64_t busyNs = 0;
    uint64_t busyMarks[2] = {0, 0};  // the owner's utilisation checkpoints (busy_window.hpp)
};

// One live process as a reader sees it.
struct ProcessRecord {
    uint32_t slot = 0;
    uint32_t pid = 0;  // in the owner's pid namespace
    bool pidVisible =
        false;  // the owner shares the reader's pid namespace, so pid means the same here
    uint32_t localPid = 0;  // the owner's pid in the reader's namespace: pid when visible, else the
                            // kernel's translation; 0 when the owner is invisible from here
    bool self = false;      // the slot of this Registry
    uint64_t pidnsInode = 0;
    uint64_t startTime = 0;
    uint64_t registeredNs = 0;
    std::string comm;
    std::vector<DeviceFigures> devices;  // deviceCount() entries
};

// Names an export (or an exported event) of some process: what an IPC handle carries.
struct IpcRef {
    uint32_t slot = 0;
    uint32_t index = 0;
    uint64_t registration = 0;  // the exporter slot's registeredNs: tells its registrations apart
    uint64_t generation = 0;    // of the record: tells its reuses apart
};

// Where exported device memory lies.
struct ExportInfo {
    uint32_t device = 0;
    uint64_t fileOffset = 0;
    uint64_t size = 0;
    uint64_t fileDev = 0;
    uint64_t fileIno = 0;
    int32_t fd = -1;
    uint32_t pid = 0;  // the exporter's (filled by findExport)
};

// Zeroes a slot's IPC tables (a new registration).
void clearIpcTables(Slot& slot);

class Registry {
public:
    struct Options {
        uint32_t slots = kDefaultSlots;  // used when this call creates the object
        std::chrono::milliseconds lockTimeout{5000};
    };

    // Opens the machine's registry read-write, creating it (or replacing an invalid one of ours)
    // when needed. Registers nothing yet. Errors: Permission, NoSpace, Timeout, InvalidArgument,
    // System.
    static Status open(const MachineSpec& spec, const Options& options,
                       std::unique_ptr<Registry>& out);
    // Opens an existing registry read-only by object name; never creates, never registers.
    // Errors: NotFound, Unavailable (not a valid registry: half-created, another layout),
    // Permission.
    static Status openReadOnly(const std::string& objectName, std::unique_ptr<Registry>& out);
    // Opens an existing registry read-write by object name without creating it or registering: a
    // tool that reaps dead slots or posts a request. Errors: NotFound, Unavailable, Permission,
    // Timeout.
    static Status openExisting(const std::string& objectName, std::unique_ptr<Registry>& out);
    // Gives the slot up (counters zeroed, request watcher joined, files of its requests that no
    // tool waits for removed) when this process registered. A process that exits with its slot does
    // the same for its request files (an atexit handler installed by attach).
    ~Registry();
    Registry(const Registry&) = delete;
    Registry& operator=(const Registry&) = delete;

    const std::string& name() const { return name_; }
    // The user's directory the object lies in (user_directory.hpp).
    const std::string& directory() const { return directory_; }
    // "" normally; when another user holds the usual directory's name: what is wrong, where the
    // registry is instead and how to get the usual place back (the runtime logs it as a warning).
    const std::string& notice() const { return notice_; }
    bool readOnly() const { return readOnly_; }
    bool created() const { return created_; }
    bool recreated() const { return recreated_; }
    uint32_t deviceCount() const { return header_->deviceCount; }
    uint32_t maxSlots() const { return header_->maxSlots; }
    uint64_t capacity(uint32_t device) const {
        return device < deviceCount() ? header_->capacity[device] : 0;
    }
    std::string machine() const;

    // Claims a slot for this process (again in a forked child) and starts its request watcher
    // (request_watcher.hpp). Errors: SlotsExhausted, Timeout.
    Status attach();
    // This process's slot, or -1 before attach (or in a child that has not used the registry yet).
    int32_t slot() const;

    // Reserves bytes of device capacity for this process. Errors: OutOfCapacity (nothing taken; the
    // message gives what live processes hold, as does *held when given), InvalidArgument,
    // SlotsExhausted, Timeout.
    Status reserve(uint32_t device, uint64_t bytes, uint64_t* held = nullptr);
    // Gives bytes back (never below zero: a forked child releasing its parent's memory takes
    // nothing).
    void release(uint32_t device, uint64_t bytes);
    // The process allocator's allocated bytes: one release store (plus a peak update when it
    // grows). Inline: the caching allocator publishes on every allocation and free.
    void publishAllocated(uint32_t device, uint64_t bytes) {
        refreshAfterFork();
        const int32_t own = slot_.load(std::memory_order_acquire);
        if (own < 0 || device >= deviceCount()) return;
        SlotDevice& mine = slotAt(static_cast<uint32_t>(own)).devices[device];
        if (bytes > mine.peakAllocated.load(std::memory_order_relaxed))
            raisePeak(mine.peakAllocated, bytes);
        mine.allocated.store(bytes, std::memory_order_release);
    }
    // The words publishAllocated writes, for a caller that writes them itself (driver ABI 1.7,
    // memGetAllocatedWords): false before this process has a slot (or for a device out of range).
    // std::atomic<uint64_t> is lock-free and has uint64_t's layout, so C code may store to them
    // with
    // __atomic_store_n. Thread-safe.
    bool allocatedWords(uint32_t device, std::atomic<uint64_t>*& allocated,
                        std::atomic<uint64_t>*& peak) {
        refreshAfterFork();
        const int32_t own = slot_.load(std::memory_order_acquire);
        if (own < 0 || device >= deviceCount()) return false;
        SlotDevice& mine = slotAt(static_cast<uint32_t>(own)).devices[device];
        allocated = &mine.allocated;
        peak = &mine.peakAllocated;
        return true;
    }
    // Engine time spent on this process's work, ending at nowNs (CLOCK_MONOTONIC): one relaxed add,
    // plus a new utilisation checkpoint at most once a second (busy_window.hpp).
    void addBusy(uint32_t device, uint64_t ns, uint64_t nowNs);

    // Device memory reserved by every live process; lock-free, so a sum taken while others reserve
    // and release may mix moments.
    uint64_t used(uint32_t device) const;
    // The same under the admission mutex: the figure admission decides on. Blocks like reserve.
    Status usedExact(uint32_t device, uint64_t& bytes);
    // Every live process, in slot order.
    std::vector<ProcessRecord> processes() const;
    // Whether slot has a live owner.
    bool slotAlive(uint32_t slot) const;
    // Frees slots whose owner died (their memory already counts as free); returns how many.
    uint32_t reap();

    // The request word of this process's slot (0: none) and the acknowledgement of a served token.
    uint64_t pendingRequest() const;
    void acknowledge(uint64_t token);
    // A tool asks the owner of slot for something (requests.hpp: makeRequest) and wakes its
    // watcher. One request at a time: a post never replaces a pending one. Errors: Busy (another
    // request is pending: try again), NotFound (no live owner), InvalidArgument.
    Status postRequest(uint32_t slot, uint64_t request);
    uint64_t acknowledged(uint32_t slot) const;
    // The tool took the answer ack that acknowledged() returned: the word is free for the next
    // answer.
    void takeAcknowledgement(uint32_t slot, uint64_t ack);
    // A tool takes back its request that the owner has not finished serving (it gave up waiting):
    // true when the slot's word still held it, and then the owner drops whatever it writes for it;
    // false when the owner has just answered it (its acknowledgement follows, within 1 s) or is
    // stopping.
    bool withdrawRequest(uint32_t slot, uint64_t request);

    // A tool marks itself as waiting for the answer to token, from before it posts the request
    // until it took the answer's file (requests.hpp: a shared lock on requesterLockByte(token) in
    // the lock file, which the kernel drops if the tool dies). Errors: Timeout, InvalidArgument
    // (read-only), System.
    Status holdRequest(uint32_t token);
    void releaseRequest(uint32_t token);
    // Removes the request files of this registry (of this process's own slot when ownSlotOnly) that
    // no live tool waits for: answers nobody took, .tmp files of killed writers. Returns how many.
    // Never blocks.
    uint32_t removeAbandonedRequestFiles(bool ownSlotOnly) const;

    // --- IPC records (registry_ipc.cpp; reference/smi-topology-ipc.md 6.3). Lock-free: each
    // process writes only its own slot, importer and exporter meet through sequentially consistent
    // accesses. Publishes an export of this process. Errors: TableFull, SlotsExhausted, Timeout.
    Status publishExport(const ExportInfo& info, IpcRef& out);
    // Makes the export stale for new opens and counts live processes that have it open (*openers);
    // with none the record is freed. Call again until it reports 0. Errors: InvalidArgument (no
    // such export of this process).
    Status revokeExport(const IpcRef& ref, uint32_t& openers);
    // What ref names, for an importer. Errors: SelfImport, Stale (the message says why),
    // InvalidArgument (indices out of range).
    Status findExport(const IpcRef& ref, ExportInfo& out);
    // Records one more open of ref in this process's slot (*opens: now), then checks that ref is
    // still live (an exporter revoking meanwhile sees the record or the importer sees the
    // revocation). Errors: those of findExport, TableFull.
    Status addImport(const IpcRef& ref, uint32_t& importIndex, uint32_t& opens);
    // One open fewer; returns the opens left (0: the record is free).
    uint32_t dropImport(uint32_t importIndex);
    // An event record of this process for an interprocess event. Errors: TableFull, SlotsExhausted.
    Status publishEvent(uint32_t device, IpcRef& out, EventRecord*& record);
    // The shared record of another process's event (*pid: its exporter's). Errors: SelfImport,
    // Stale, InvalidArgument.
    Status findEvent(const IpcRef& ref, EventRecord*& record, uint32_t* pid = nullptr);
    // Whether the event is still live: its exporter alive and the record not destroyed.
    bool eventAlive(const IpcRef& ref) const;
    // The exporter destroys its event: importers' waits end with an error.
    void killEvent(const IpcRef& ref);

    // How often this process repaired the admission mutex of a dead owner.
    uint64_t admissionRecoveries() const { return recoveries_.load(std::memory_order_relaxed); }
    // Whether this process is a fork of the one that opened the registry, and has not used it
    // since. Never blocks. Thread-safe.
    bool inheritedThroughFork() const noexcept {
        return forkGeneration_.load(std::memory_order_relaxed) != fork_guard::generation();
    }

private:
    Registry();
    // In a forked child (fork_guard's generation moved), drops the parent's slot and lock
    // descriptor.
    void refreshAfterFork() const {
        if (inheritedThroughFork()) [[unlikely]]
            refreshAfterForkSlow();
    }
    void refreshAfterForkSlow() const;
    static void raisePeak(std::atomic<uint64_t>& peak, uint64_t value);
    Status claimSlotLocked();
    uint64_t usedLocked(uint32_t device) const;
    bool alive(uint32_t slot) const;
    Slot& slotAt(uint32_t index) const { return slots_[index]; }
    // Whether ref's exporter slot is alive with the same registration; the message says why not.
    Status exporterLive(const IpcRef& ref, uint32_t& pid) const;
    uint64_t nextGeneration() { return ipcGeneration_.fetch_add(1, std::memory_order_relaxed) + 1; }

    std::string name_;
    std::string directory_;
    std::string notice_;
    bool readOnly_ = false;
    bool created_ = false;
    bool recreated_ = false;
    std::chrono::milliseconds lockTimeout_{5000};
    std::unique_ptr<MappedObject> object_;  // never null
    Header* header_ = nullptr;
    Slot* slots_ = nullptr;
    mutable LockFile lock_;
    mutable std::mutex mu_;  // attach and fork refresh
    mutable std::atomic<uint64_t> forkGeneration_{0};
    mutable std::atomic<int32_t> slot_{-1};
    mutable std::atomic<uint64_t> recoveries_{0};
    std::atomic<uint64_t> ipcGeneration_{0};
    std::mutex ipcMu_;                // this process's writers of its IPC tables
    mutable RequestWatcher watcher_;  // runs while this process owns a slot
};

}  // namespace mtia::registry
