// Entries about queues and the commands submitted to them.
#include "ops_common.hpp"
#include "prepare.hpp"

#include <memory>

namespace mtia::sim::ops {
namespace {

// The calling thread's last queue (one cache for submissions, one for queries). The reference it
// holds keeps the object alive, and the handle is known live while no queue handle was destroyed
// since (the epoch): a destroy racing with a submit through the cache is ordered as if the submit
// came first.
struct SubmitCache {
    // Bypassed once destroyed (the main thread's thread-locals go first when exit() starts).
    ~SubmitCache() {
        queue.reset();
        alive = false;
    }
    bool alive = true;
    const void* handle = nullptr;
    uint64_t epoch = 0;
    std::shared_ptr<Queue> queue;

    Queue* find(const Handles& handles, const void* h) const {
        if (!alive || h != handle || epoch != handles.queueEpoch.load(std::memory_order_acquire))
            return nullptr;
        return queue.get();
    }
    // Called with handles.mu held (shared), so the epoch read matches the lookup.
    void remember(const Handles& handles, const void* h, const std::shared_ptr<Queue>& q) {
        if (!alive) return;
        handle = h;
        epoch = handles.queueEpoch.load(std::memory_order_acquire);
        queue = q;
    }
};
thread_local SubmitCache tSubmitCache;
thread_local SubmitCache
    tQueryCache;  // separate, so polling one queue while feeding another hits both

}  // namespace

// Thread-safe; the device's first queue starts its engine threads. Errors: mtiaErrorInvalidDevice,
// mtiaErrorInvalidValue (queue NULL, flags not 0).
mtiaError_t queueCreate(int32_t dev, int32_t priority, uint32_t flags, mtiaDrvQueue* queue) {
    return guarded("queueCreate", [&] {
        Device* device = nullptr;
        if (mtiaError_t err = deviceFor("queueCreate", dev, device); err != mtiaSuccess) return err;
        if (queue == nullptr) return nullArgument("queueCreate", "queue");
        if (flags != 0)
            return reportErrorf(mtiaErrorInvalidValue, "queueCreate: flags must be 0, got {:#x}",
                                flags);
        std::shared_ptr<Queue> created = device->createQueue(priority);
        Handles& handles = device->machine().handles();
        std::unique_lock lock(handles.mu);
        const Queue* raw = created.get();
        handles.queues.emplace(raw, std::move(created));
        *queue = reinterpret_cast<mtiaDrvQueue>(const_cast<Queue*>(raw));
        return mtiaSuccess;
    });
}

// Thread-safe, returns at once: queued commands still run, and commands that wait on this queue
// keep it alive. Errors: mtiaErrorInvalidHandle.
mtiaError_t queueDestroy(mtiaDrvQueue queue) {
    return guarded("queueDestroy", [&] {
        Machine* machine = nullptr;
        if (mtiaError_t err = machineFor("queueDestroy", machine); err != mtiaSuccess) return err;
        Handles& handles = machine->handles();
        std::shared_ptr<Queue> dropped;  // released after the lock
        std::unique_lock lock(handles.mu);
        auto it = handles.queues.find(reinterpret_cast<const Queue*>(queue));
        if (it == handles.queues.end()) {
            return reportErrorf(mtiaErrorInvalidHandle, "queueDestroy: {} is not a live queue",
                                static_cast<void*>(queue));
        }
        dropped = std::move(it->second);
        handles.queues.erase(it);
        handles.queueEpoch.fetch_add(1, std::memory_order_release);
        lock.unlock();
        return mtiaSuccess;
    });
}

// Thread-safe and cheap while the queue has room: the queue's own lock, and the device's scheduler
// lock only when the queue was idle. Blocking: a host thread whose queue holds MTIA_SIM_QUEUE_DEPTH
// commands not yet completed sleeps until half of them completed, or until the device faults (then
// mtiaErrorLaunchFailure, nothing queued); engine threads (host functions) never block. Copies
// kernel argument values before returning; a command list costs one submission whatever its length.
// Errors: mtiaErrorInvalidValue (cmd or seq NULL, malformed command, a list of another device),
// mtiaErrorInvalidHandle (queue, kernel, wait target or list), the sticky fault's code
// (mtiaErrorLaunchFailure or mtiaErrorIllegalAddress: the device has a sticky fault).
mtiaError_t queueSubmit(mtiaDrvQueue queue, const mtiaDrvCommand* cmd, uint64_t* seq) {
    return guarded("queueSubmit", [&] {
        Machine* machine = nullptr;
        if (mtiaError_t err = machineFor("queueSubmit", machine); err != mtiaSuccess) return err;
        if (cmd == nullptr || seq == nullptr) return nullArgument("queueSubmit", "cmd and seq");
        Handles& handles = machine->handles();
        // held: the handle lock of the slow path, which a submit that has to wait for room gives up
        // first (the prepared command holds what it names; the queue keeps itself alive).
        auto submitTo = [&](Queue& q, std::shared_lock<std::shared_mutex>* held) {
            Device& device = q.device();
            if (mtiaError_t err = device.status(); err != mtiaSuccess) return err;
            PendingCommand pending;
            if (mtiaError_t err = prepareCommand(*machine, device, CommandSite{"queueSubmit"}, *cmd,
                                                 pending.command);
                err != mtiaSuccess) {
                return err;
            }
            pickInjectedFaults(machine->faults(), pending.command);
            if (!q.submit(pending.command, *seq, held)) return device.status();
            return mtiaSuccess;
        };
        // The common case (the thread's last queue, a command that names no other handle) needs no
        // lock.
        if (!namesOtherHandles(*cmd)) {
            if (Queue* q = tSubmitCache.find(handles, queue)) return submitTo(*q, nullptr);
        }
        std::shared_lock lock(handles.mu);  // queue stays alive for the call
        auto it = handles.queues.find(reinterpret_cast<const Queue*>(queue));
        if (it == handles.queues.end()) {
            return reportErrorf(mtiaErrorInvalidHandle, "queueSubmit: {} is not a live queue",
                                static_cast<void*>(queue));
        }
        tSubmitCache.remember(handles, queue, it->second);
        return submitTo(*it->second, &lock);
    });
}

// Runs read(queue) on a live queue, through the thread's query cache. Errors:
// mtiaErrorInvalidHandle.
template <class Read>
mtiaError_t readQueue(const char* entry, mtiaDrvQueue queue, Read&& read) {
    Machine* machine = nullptr;
    if (mtiaError_t err = machineFor(entry, machine); err != mtiaSuccess) return err;
    Handles& handles = machine->handles();
    if (Queue* q = tQueryCache.find(handles, queue)) {
        read(*q);
        return mtiaSuccess;
    }
    std::shared_lock lock(handles.mu);
    auto it = handles.queues.find(reinterpret_cast<const Queue*>(queue));
    if (it == handles.queues.end()) {
        return reportErrorf(mtiaErrorInvalidHandle, "{}: {} is not a live queue", entry,
                            static_cast<void*>(queue));
    }
    tQueryCache.remember(handles, queue, it->second);
    read(*it->second);
    return mtiaSuccess;
}

// Thread-safe, never blocks. Errors: mtiaErrorInvalidHandle, mtiaErrorInvalidValue (completed
// NULL).
mtiaError_t queueQuery(mtiaDrvQueue queue, uint64_t* completed) {
    return guarded("queueQuery", [&] {
        if (completed == nullptr) return nullArgument("queueQuery", "completed");
        return readQueue("queueQuery", queue, [&](const Queue& q) { *completed = q.completed(); });
    });
}

// Thread-safe, never blocks. The submitted count is read first: a command counted there may have
// completed by the time completed is read, never the other way round. Errors:
// mtiaErrorInvalidHandle, mtiaErrorInvalidValue (submitted or completed NULL).
mtiaError_t queueGetCounts(mtiaDrvQueue queue, uint64_t* submitted, uint64_t* completed) {
    return guarded("queueGetCounts", [&] {
        if (submitted == nullptr || completed == nullptr)
            return nullArgument("queueGetCounts", "submitted and completed");
        return readQueue("queueGetCounts", queue, [&](const Queue& q) {
            *submitted = q.submitted();
            *completed = q.completed();
        });
    });
}

// Thread-safe; blocks until command seq completed (MTIA_DRV_WAIT_SPIN polls and yields first,
// MTIA_DRV_WAIT_SLEEP sleeps at once). Errors: mtiaErrorInvalidHandle, mtiaErrorInvalidValue
// (unknown flags, seq not submitted yet), mtiaErrorNotPermitted (a host function of this device
// would wait for pending work of its own device), mtiaErrorLaunchFailure or mtiaErrorIllegalAddress
// (the device's sticky fault).
mtiaError_t queueWait(mtiaDrvQueue queue, uint64_t seq, uint32_t flags) {
    return guarded("queueWait", [&] {
        Machine* machine = nullptr;
        if (mtiaError_t err = machineFor("queueWait", machine); err != mtiaSuccess) return err;
        if (flags != MTIA_DRV_WAIT_SPIN && flags != MTIA_DRV_WAIT_SLEEP) {
            return reportErrorf(mtiaErrorInvalidValue, "queueWait: unknown flags {:#x}", flags);
        }
        std::shared_ptr<Queue> q;
        {
            Handles& handles = machine->handles();
            std::shared_lock lock(handles.mu);
            auto it = handles.queues.find(reinterpret_cast<const Queue*>(queue));
            if (it == handles.queues.end()) {
                return reportErrorf(mtiaErrorInvalidHandle, "queueWait: {} is not a live queue",
                                    static_cast<void*>(queue));
            }
            q = it->second;
        }
        if (seq > q->submitted()) {
            return reportErrorf(mtiaErrorInvalidValue,
                                "queueWait: command {} was never submitted (the queue has {})", seq,
                                q->submitted());
        }
        if (q->completed() < seq) {
            if (waitWouldBlockEngine(q->device())) {
                return reportErrorf(
                    mtiaErrorNotPermitted,
                    "queueWait: called from a host function of device {} for pending work",
                    q->device().index());
            }
            q->waitFor(seq, flags == MTIA_DRV_WAIT_SPIN);
        }
        return q->device().status();
    });
}

}  // namespace mtia::sim::ops
