#include "registry.hpp"

#include "admission.hpp"
#include "busy_window.hpp"
#include "fork_guard.hpp"
#include "process_identity.hpp"
#include "requests.hpp"
#include "shared_object.hpp"
#include "test_hooks.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace mtia::registry {
namespace {

uint64_t realtimeNs() {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void raiseTo(std::atomic<uint64_t>& peak, uint64_t value) {
    uint64_t seen = peak.load(std::memory_order_relaxed);
    while (value > seen && !peak.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {}
}

void clearCounters(Slot& slot) {
    for (SlotDevice& d : slot.devices) {
        d.reserved.store(0, std::memory_order_relaxed);
        d.allocated.store(0, std::memory_order_relaxed);
        d.peakReserved.store(0, std::memory_order_relaxed);
        d.peakAllocated.store(0, std::memory_order_relaxed);
        d.busyNs.store(0, std::memory_order_relaxed);
        d.busyMarks[0].store(0, std::memory_order_relaxed);
        d.busyMarks[1].store(0, std::memory_order_relaxed);
    }
    slot.request.store(0, std::memory_order_relaxed);
    slot.ack.store(0, std::memory_order_relaxed);
    clearIpcTables(slot);
}

// Registries of this process that own a slot: at exit their request files that no tool waits for go
// (the runtime never destroys its registry, so ~Registry does not run then).
std::mutex gOwnersMu;
std::vector<const Registry*>& owners() {
    static auto* list =
        new std::vector<const Registry*>();  // never destroyed: used by the exit handler
    return *list;
}

void removeAbandonedAtExit() {
    // try_lock: a fork child may have copied the mutex held by a thread it does not have.
    std::unique_lock lock(gOwnersMu, std::try_to_lock);
    if (!lock.owns_lock()) return;
    // A forked child's copies are the parent's registries: the child owns no slot in them, and
    // refreshing them would take their mutex (perhaps copied held) and reopen the lock file just to
    // find that out.
    for (const Registry* r : owners())
        if (!r->inheritedThroughFork()) (void)r->removeAbandonedRequestFiles(true);
}

void addOwner(const Registry* registry) {
    static std::once_flag installed;
    std::call_once(installed, [] { std::atexit(removeAbandonedAtExit); });
    std::lock_guard lock(gOwnersMu);
    auto& list = owners();
    if (std::find(list.begin(), list.end(), registry) == list.end()) list.push_back(registry);
}

void removeOwner(const Registry* registry) {
    std::lock_guard lock(gOwnersMu);
    auto& list = owners();
    list.erase(std::remove(list.begin(), list.end(), registry), list.end());
}

}  // namespace

Status Registry::open(const MachineSpec& spec, const Options& options,
                      std::unique_ptr<Registry>& out) {
    if (spec.devices > kMaxDevices)
        return Status::error(Code::InvalidArgument, "registry: " + std::to_string(spec.devices) +
                                                        " devices exceed " +
                                                        std::to_string(kMaxDevices));
    std::unique_ptr<Registry> registry(new Registry());
    ObjectRequest request;
    request.name = spec.objectName(geteuid());
    request.create = true;
    request.slots = options.slots;
    request.machine = spec.description();
    request.capacity.assign(spec.devices, spec.memoryBytes);
    request.lockTimeout = options.lockTimeout;
    if (Status s = openObject(request, registry->lock_, *registry->object_); !s) return s;
    registry->name_ = request.name;
    registry->directory_ = registry->object_->directory;
    registry->notice_ = registry->object_->notice;
    registry->lockTimeout_ = options.lockTimeout;
    registry->header_ = registry->object_->header;
    registry->slots_ = registry->object_->slots;
    registry->created_ = registry->object_->created;
    registry->recreated_ = registry->object_->recreated;
    registry->forkGeneration_.store(fork_guard::generation(), std::memory_order_relaxed);
    fork_guard::track(registry->lock_.fd());
    out = std::move(registry);
    return Status::ok();
}

Status Registry::openReadOnly(const std::string& objectName, std::unique_ptr<Registry>& out) {
    std::unique_ptr<Registry> registry(new Registry());
    ObjectRequest request;
    request.name = objectName;
    request.create = false;
    if (Status s = openObject(request, registry->lock_, *registry->object_); !s) return s;
    registry->name_ = objectName;
    registry->directory_ = registry->object_->directory;
    registry->notice_ = registry->object_->notice;
    registry->readOnly_ = true;
    registry->header_ = registry->object_->header;
    registry->slots_ = registry->object_->slots;
    registry->forkGeneration_.store(fork_guard::generation(), std::memory_order_relaxed);
    fork_guard::track(registry->lock_.fd());
    out = std::move(registry);
    return Status::ok();
}

Status Registry::openExisting(const std::string& objectName, std::unique_ptr<Registry>& out) {
    std::unique_ptr<Registry> registry(new Registry());
    ObjectRequest request;
    request.name = objectName;
    request.create = false;
    request.writable = true;
    if (Status s = openObject(request, registry->lock_, *registry->object_); !s) return s;
    registry->name_ = objectName;
    registry->directory_ = registry->object_->directory;
    registry->notice_ = registry->object_->notice;
    registry->header_ = registry->object_->header;
    registry->slots_ = registry->object_->slots;
    registry->forkGeneration_.store(fork_guard::generation(), std::memory_order_relaxed);
    fork_guard::track(registry->lock_.fd());
    out = std::move(registry);
    return Status::ok();
}

Registry::Registry() : object_(std::make_unique<MappedObject>()) {}

Registry::~Registry() {
    refreshAfterFork();
    removeOwner(this);
    const int32_t own = slot_.load(std::memory_order_relaxed);
    if (own >= 0) {
        watcher_.stop();
        (void)removeAbandonedRequestFiles(true);
        Slot& slot = slotAt(static_cast<uint32_t>(own));
        slot.seq.fetch_add(1, std::memory_order_acq_rel);
        clearCounters(slot);
        slot.state.store(static_cast<uint32_t>(SlotState::Free), std::memory_order_release);
        slot.seq.fetch_add(1, std::memory_order_release);
        lock_.unlock(slotLockByte(static_cast<uint32_t>(own)));
    }
    if (lock_.isOpen()) fork_guard::untrack(lock_.fd());
}

std::string Registry::machine() const {
    return std::string(header_->machine, strnlen(header_->machine, sizeof header_->machine));
}

void Registry::refreshAfterForkSlow() const {
    const uint64_t now = fork_guard::generation();
    std::lock_guard lock(mu_);
    if (forkGeneration_.load(std::memory_order_relaxed) == now) return;
    // The child handler closed our descriptor (and with it nothing of the parent's): open our own.
    lock_.abandon();
    watcher_.forget();  // the parent's thread; this child starts its own when it registers
    if (Status s = lock_.open(lockPath(directory_, name_), false, !readOnly_); s) {
        fork_guard::track(lock_.fd());
        // The parent's opener lock lives on with the parent: hold one of our own.
        if (!readOnly_) (void)lock_.lockUntil(openerLockByte(), false, lockTimeout_);
    }
    slot_.store(-1, std::memory_order_relaxed);
    forkGeneration_.store(now, std::memory_order_relaxed);
}

int32_t Registry::slot() const {
    refreshAfterFork();
    return slot_.load(std::memory_order_acquire);
}

Status Registry::attach() {
    refreshAfterFork();
    if (slot_.load(std::memory_order_acquire) >= 0) return Status::ok();
    if (readOnly_)
        return Status::error(Code::InvalidArgument, "registry " + name_ + " is open read-only");
    std::lock_guard lock(mu_);
    if (slot_.load(std::memory_order_relaxed) >= 0) return Status::ok();
    if (!lock_.isOpen())
        return Status::error(Code::System,
                             "registry " + name_ + ": its lock file could not be reopened");
    // Under the admission mutex, so no reservation sums a half-claimed slot that still shows a dead
    // owner's figures.
    Admission admission(*header_, lockTimeout_, recoveries_);
    if (!admission.status()) return admission.status();
    return claimSlotLocked();
}

Status Registry::claimSlotLocked() {
    const ProcessIdentity me = currentProcess();
    for (uint32_t i = 0; i < header_->maxSlots; ++i) {
        // A byte nobody holds means the slot's last owner (if any) is dead, whatever its state
        // says.
        if (!lock_.tryLock(slotLockByte(i))) continue;
        Slot& slot = slotAt(i);
        slot.seq.fetch_add(1, std::memory_order_acq_rel);  // odd: identity being written
        clearCounters(slot);
        const uint64_t now = monotonicClockNs();
        for (uint32_t d = 0; d < deviceCount(); ++d)  // utilisation windows start at registration
            slot.devices[d].busyMarks[1].store(makeBusyMark(now, 0), std::memory_order_relaxed);
        slot.pid = me.pid;
        slot.pidnsInode = me.pidnsInode;
        slot.startTime = me.startTime;
        slot.registeredNs = realtimeNs();
        std::memset(slot.comm, 0, sizeof slot.comm);
        std::memcpy(slot.comm, me.comm.data(), std::min(me.comm.size(), sizeof slot.comm - 1));
        slot.state.store(static_cast<uint32_t>(SlotState::Active), std::memory_order_release);
        slot.seq.fetch_add(1, std::memory_order_release);
        (void)lock_.tryLockClassic(pidLockByte(i));  // best effort: only gives readers our pid
        slot_.store(static_cast<int32_t>(i), std::memory_order_release);
        (void)watcher_.start(
            slot, i, name_,
            directory_);  // without it requests time out; registering still succeeds
        addOwner(this);
        return Status::ok();
    }
    return Status::error(Code::SlotsExhausted, "registry " + name_ + ": all " +
                                                   std::to_string(header_->maxSlots) +
                                                   " process slots are held by live processes");
}

bool Registry::alive(uint32_t index) const {
    if (slotAt(index).state.load(std::memory_order_acquire) !=
        static_cast<uint32_t>(SlotState::Active))
        return false;
    // Our own OFD lock never conflicts with our own description, so ask about ourselves directly.
    if (static_cast<int32_t>(index) == slot_.load(std::memory_order_relaxed)) return true;
    return lock_.lockedByOther(slotLockByte(index));
}

bool Registry::slotAlive(uint32_t index) const {
    refreshAfterFork();
    return index < header_->maxSlots && alive(index);
}

uint64_t Registry::usedLocked(uint32_t device) const {
    uint64_t sum = 0;
    for (uint32_t i = 0; i < header_->maxSlots; ++i) {
        const uint64_t held = slotAt(i).devices[device].reserved.load(std::memory_order_acquire);
        if (held != 0 && alive(i)) sum += held;
    }
    return sum;
}

uint64_t Registry::used(uint32_t device) const {
    refreshAfterFork();
    return device < deviceCount() ? usedLocked(device) : 0;
}

Status Registry::reserve(uint32_t device, uint64_t bytes, uint64_t* heldOut) {
    if (device >= deviceCount())
        return Status::error(Code::InvalidArgument,
                             "registry " + name_ + ": no device " + std::to_string(device));
    if (Status s = attach(); !s) return s;
    const uint32_t own = static_cast<uint32_t>(slot_.load(std::memory_order_acquire));
    Admission admission(*header_, lockTimeout_, recoveries_);
    if (!admission.status()) return admission.status();
    testing::runHook(testing::Point::HoldingAdmission);
    const uint64_t total = header_->capacity[device];
    const uint64_t held = usedLocked(device);
    if (heldOut != nullptr) *heldOut = held;
    if (held > total || bytes > total - held) {
        return Status::error(Code::OutOfCapacity, "device " + std::to_string(device) +
                                                      ": requested " + std::to_string(bytes) +
                                                      " bytes, " + std::to_string(held) +
                                                      " bytes held by live processes of " +
                                                      std::to_string(total) + " total");
    }
    SlotDevice& mine = slotAt(own).devices[device];
    const uint64_t now = mine.reserved.load(std::memory_order_relaxed) + bytes;
    // Peak first: a reader that loads the figure (acquire) and then its peak never sees peak <
    // figure.
    raiseTo(mine.peakReserved, now);
    mine.reserved.store(now, std::memory_order_release);
    return Status::ok();
}

Status Registry::usedExact(uint32_t device, uint64_t& bytes) {
    refreshAfterFork();
    if (device >= deviceCount())
        return Status::error(Code::InvalidArgument,
                             "registry " + name_ + ": no device " + std::to_string(device));
    if (readOnly_)
        return Status::error(Code::InvalidArgument, "registry " + name_ + " is open read-only");
    Admission admission(*header_, lockTimeout_, recoveries_);
    if (!admission.status()) return admission.status();
    bytes = usedLocked(device);
    return Status::ok();
}

void Registry::release(uint32_t device, uint64_t bytes) {
    refreshAfterFork();
    const int32_t own = slot_.load(std::memory_order_acquire);
    if (own < 0 || device >= deviceCount()) return;
    std::atomic<uint64_t>& reserved = slotAt(static_cast<uint32_t>(own)).devices[device].reserved;
    uint64_t seen = reserved.load(std::memory_order_relaxed);
    while (!reserved.compare_exchange_weak(seen, seen > bytes ? seen - bytes : 0,
                                           std::memory_order_release)) {}
}

void Registry::raisePeak(std::atomic<uint64_t>& peak, uint64_t value) {
    raiseTo(peak, value);
}

void Registry::addBusy(uint32_t device, uint64_t ns, uint64_t nowNs) {
    refreshAfterFork();
    const int32_t own = slot_.load(std::memory_order_acquire);
    if (own < 0 || device >= deviceCount()) return;
    SlotDevice& d = slotAt(static_cast<uint32_t>(own)).devices[device];
    const uint64_t total = d.busyNs.fetch_add(ns, std::memory_order_relaxed) + ns;
    // Engines of this process may race here; either one's checkpoint is a right one.
    const uint64_t newer = d.busyMarks[1].load(std::memory_order_relaxed);
    if (busyMarkDue(newer, nowNs)) {
        d.busyMarks[0].store(newer, std::memory_order_relaxed);
        d.busyMarks[1].store(makeBusyMark(nowNs, total), std::memory_order_relaxed);
    }
}

std::vector<ProcessRecord> Registry::processes() const {
    refreshAfterFork();
    const uint64_t myNamespace = currentPidNamespace();
    const int32_t own = slot_.load(std::memory_order_acquire);
    std::vector<ProcessRecord> records;
    for (uint32_t i = 0; i < header_->maxSlots; ++i) {
        if (!alive(i)) continue;
        const Slot& slot = slotAt(i);
        ProcessRecord r;
        r.devices.resize(deviceCount());
        // Seqlock read: identity and figures of one registration. The counters change without the
        // seqlock (each figure is stored after its peak, so reading figure then peak is
        // consistent); the seqlock only guards against a re-registration, which clears them, in
        // between.
        bool consistent = false;
        for (int attempt = 0; attempt < 64 && !consistent; ++attempt) {
            const uint32_t before = slot.seq.load(std::memory_order_acquire);
            if ((before & 1u) != 0) continue;
            r.pid = slot.pid;
            r.pidnsInode = slot.pidnsInode;
            r.startTime = slot.startTime;
            r.registeredNs = slot.registeredNs;
            char comm[kCommBytes];
            std::memcpy(comm, slot.comm, sizeof comm);
            r.comm.assign(comm, strnlen(comm, sizeof comm));
            for (uint32_t d = 0; d < deviceCount(); ++d) {
                const SlotDevice& s = slot.devices[d];
                DeviceFigures& f = r.devices[d];
                f.reserved = s.reserved.load(std::memory_order_acquire);
                f.peakReserved = s.peakReserved.load(std::memory_order_relaxed);
                f.allocated = s.allocated.load(std::memory_order_acquire);
                f.peakAllocated = s.peakAllocated.load(std::memory_order_relaxed);
                f.busyNs = s.busyNs.load(std::memory_order_relaxed);
                f.busyMarks[0] = s.busyMarks[0].load(std::memory_order_relaxed);
                f.busyMarks[1] = s.busyMarks[1].load(std::memory_order_relaxed);
            }
#if defined(__SANITIZE_THREAD__)
            // ThreadSanitizer models no fences (GCC refuses them under it): an acquire load stands
            // in.
            consistent = slot.seq.load(std::memory_order_acquire) == before;
#else
            std::atomic_thread_fence(
                std::memory_order_acquire);  // the reads above happen before the check
            consistent = slot.seq.load(std::memory_order_relaxed) == before;
#endif
        }
        // A slot changing hands on every try is being registered right now: leave it to the next
        // look.
        if (!consistent || !alive(i)) continue;
        r.slot = i;
        r.self = static_cast<int32_t>(i) == own;
        r.pidVisible = r.pidnsInode != 0 && r.pidnsInode == myNamespace;
        r.localPid =
            r.pidVisible ? r.pid : static_cast<uint32_t>(lock_.classicHolder(pidLockByte(i)));
        records.push_back(std::move(r));
    }
    return records;
}

uint32_t Registry::reap() {
    refreshAfterFork();
    if (readOnly_) return 0;
    uint32_t reaped = 0;
    for (uint32_t i = 0; i < header_->maxSlots; ++i) {
        Slot& slot = slotAt(i);
        if (slot.state.load(std::memory_order_acquire) != static_cast<uint32_t>(SlotState::Active))
            continue;
        if (static_cast<int32_t>(i) == slot_.load(std::memory_order_relaxed)) continue;
        // Taking the byte proves the owner is gone; holding it while we clear keeps claimers out.
        if (!lock_.tryLock(slotLockByte(i))) continue;
        slot.seq.fetch_add(1, std::memory_order_acq_rel);
        clearCounters(slot);
        slot.state.store(static_cast<uint32_t>(SlotState::Free), std::memory_order_release);
        slot.seq.fetch_add(1, std::memory_order_release);
        lock_.unlock(slotLockByte(i));
        ++reaped;
    }
    return reaped;
}

uint64_t Registry::pendingRequest() const {
    const int32_t own = slot();
    return own < 0 ? 0 : slotAt(static_cast<uint32_t>(own)).request.load(std::memory_order_acquire);
}

void Registry::acknowledge(uint64_t token) {
    const int32_t own = slot();
    if (own < 0) return;
    Slot& mine = slotAt(static_cast<uint32_t>(own));
    mine.request.store(0, std::memory_order_relaxed);
    mine.ack.store(token, std::memory_order_release);
}

Status Registry::postRequest(uint32_t index, uint64_t request) {
    refreshAfterFork();
    if (readOnly_)
        return Status::error(Code::InvalidArgument, "registry " + name_ + " is open read-only");
    if (index >= header_->maxSlots)
        return Status::error(Code::InvalidArgument, "no slot " + std::to_string(index));
    if (!alive(index))
        return Status::error(Code::NotFound,
                             "slot " + std::to_string(index) + " has no live process");
    uint64_t idle = 0;
    if (!slotAt(index).request.compare_exchange_strong(idle, request, std::memory_order_acq_rel))
        return Status::error(Code::Busy,
                             "slot " + std::to_string(index) + " is serving another request");
    wakeRequestWord(slotAt(index).request);
    return Status::ok();
}

uint64_t Registry::acknowledged(uint32_t index) const {
    refreshAfterFork();
    return index < header_->maxSlots ? slotAt(index).ack.load(std::memory_order_acquire) : 0;
}

void Registry::takeAcknowledgement(uint32_t index, uint64_t ack) {
    refreshAfterFork();
    if (readOnly_ || index >= header_->maxSlots) return;
    slotAt(index).ack.compare_exchange_strong(ack, 0, std::memory_order_acq_rel);
}

bool Registry::withdrawRequest(uint32_t index, uint64_t request) {
    refreshAfterFork();
    if (readOnly_ || index >= header_->maxSlots) return false;
    uint64_t expected = request;
    return slotAt(index).request.compare_exchange_strong(expected, 0, std::memory_order_acq_rel);
}

Status Registry::holdRequest(uint32_t token) {
    refreshAfterFork();
    if (readOnly_)
        return Status::error(Code::InvalidArgument, "registry " + name_ + " is open read-only");
    if (!lock_.isOpen())
        return Status::error(Code::System,
                             "registry " + name_ + ": its lock file could not be reopened");
    return lock_.lockUntil(static_cast<off_t>(requesterLockByte(token)), false, lockTimeout_);
}

void Registry::releaseRequest(uint32_t token) {
    refreshAfterFork();
    if (lock_.isOpen()) lock_.unlock(static_cast<off_t>(requesterLockByte(token)));
}

uint32_t Registry::removeAbandonedRequestFiles(bool ownSlotOnly) const {
    refreshAfterFork();
    const int32_t own = slot_.load(std::memory_order_acquire);
    if (ownSlotOnly && own < 0) return 0;
    if (!lock_.isOpen()) return 0;
    std::string dir;
    if (!requestDirectory(directory_, false, dir)) return 0;
    // A tool's lock is on another open file description than ours, so lockedByOther sees it.
    return removeRequestFiles(dir, name_, ownSlotOnly ? own : -1, [&](uint32_t token) {
        return lock_.lockedByOther(static_cast<off_t>(requesterLockByte(token)));
    });
}

}  // namespace mtia::registry
