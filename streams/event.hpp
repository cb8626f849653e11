// An event: a marker in a stream. Recording takes a snapshot of the work
// queued on the stream so far (the stream and its last command number); the
// event is complete when that command has completed. Re-recording replaces
// the snapshot, but whoever read the old one (a stream wait, a host blocked in
// synchronize) keeps it: snapshots are plain values, copied under the event's
// lock. A timed record adds a timestamp command to the stream, or stamps the
// time on the host when the stream is idle.
#pragma once

#include "core/spin_lock.hpp"
#include "streams/ipc_event.hpp"
#include "streams/stream.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

namespace mtia::streams {

class Event {
public:
    // flags: mtiaEvent* bits, already validated.
    Event(const driver::Driver& driver, int device, int32_t driverDevice, unsigned flags);
    ~Event();  // a pending timestamp slot is handed back for reuse once its command completed
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;

    int device() const noexcept { return device_; }
    unsigned flags() const noexcept { return flags_; }
    bool timing() const noexcept;
    bool blockingSync() const noexcept;

    // Snapshots the work queued on stream so far. Thread-safe, non-blocking. Throws InvalidHandle
    // when stream belongs to another device, the sticky fault of the device.
    void record(Stream& stream);
    // True when the latest record completed or there is none. Thread-safe, non-blocking. Throws the
    // device's sticky fault.
    bool query() const;
    // Blocks until the latest record (as of the call) completed. Throws the sticky fault.
    void synchronize() const;
    // Makes later work of stream wait for the latest record (as of the call). Non-blocking.
    void enqueueWait(Stream& stream) const;
    // The capture layer's mark of a record made during a capture (null: none). A record outside
    // capture (record()) clears it; the eager record state is left alone by captures. Thread-safe.
    std::shared_ptr<const CaptureMark> captureMark() const;
    void setCaptureMark(std::shared_ptr<const CaptureMark> mark);
    // Whether the event has an eager record (record() was called at least once).
    bool recorded() const;

    // Shares the event with other processes (mtia_ipc.h), once: an exporter's records are published
    // from then on (a record made before is published on its stream now); an imported event's
    // query, synchronize and waits follow the exporter, and record() throws NotSupported.
    // Thread-safe. Throws the driver's errors (publishing a pending record).
    void setIpc(std::shared_ptr<IpcEventShare> share);
    // The share, or null. Thread-safe, lock-free.
    IpcEventShare* ipc() const noexcept { return ipcRaw_.load(std::memory_order_acquire); }
    // Whether the event was opened from another process's IPC handle (only its exporter records
    // it).
    bool imported() const noexcept;
    // Throws NotSupported for an imported event (record() and a record during capture both refuse
    // it).
    void requireRecordable() const;

    // Milliseconds from start's record to end's, with CUDA's error rules (see
    // mtiaEventElapsedTime).
    static float elapsedMs(const Event& start, const Event& end);

private:
    struct Snapshot {
        std::shared_ptr<Stream> stream;  // null: never recorded
        uint64_t seq = 0;                // 0: nothing to wait for
    };
    Snapshot snapshot() const;
    // The latest record's timestamp if it completed. Requires a timed event that was recorded.
    bool completedStamp(uint64_t& ns) const;
    void checkDevice() const;

    const driver::Driver& driver_;
    const int device_;
    const int32_t driverDevice_;
    const unsigned flags_;

    mutable SpinLock mu_;  // guards the latest record below; held for a few copies only
    std::shared_ptr<Stream> stream_;
    uint64_t seq_ = 0;
    uint64_t* stamp_ = nullptr;  // from TimestampSlots, timed records only
    std::shared_ptr<const CaptureMark> captureMark_;
    std::shared_ptr<IpcEventShare> ipc_;  // set once, under mu_
    std::atomic<IpcEventShare*> ipcRaw_{nullptr};
};

}  // namespace mtia::streams
