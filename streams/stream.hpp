// A stream: an in-order queue of device work on one device, backed by one
// driver queue. Completion is tracked by the driver's per-queue command
// numbers, so "has everything enqueued so far finished" is one comparison.
//
// The object outlives its ABI handle while anything still refers to it (an
// event's latest record, a pending timestamp): the driver queue it owns is
// released only with the last reference, and a released queue still runs
// what was submitted to it.
#pragma once

#include "platform/driver/driver.hpp"
#include "streams/capture_link.hpp"

#include <atomic>
#include <cstdint>
#include <memory>

namespace mtia::streams {

class Stream : public std::enable_shared_from_this<Stream> {
public:
    // device: the runtime's ordinal; driverDevice: the driver's. priority must already be clamped.
    // Throws Error when the driver cannot create a queue.
    Stream(const driver::Driver& driver, int device, int32_t driverDevice, int priority,
           unsigned flags, bool isDefault = false);
    ~Stream();  // releases the driver queue; queued work still runs
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;

    const driver::Driver& driver() const noexcept { return driver_; }
    int device() const noexcept { return device_; }
    int32_t driverDevice() const noexcept { return driverDevice_; }
    int priority() const noexcept { return priority_; }
    unsigned flags() const noexcept { return flags_; }
    bool isDefault() const noexcept { return isDefault_; }
    // Process-unique, > 0, never reused.
    int64_t id() const noexcept { return id_; }
    mtiaDrvQueue queue() const noexcept { return queue_; }

    // Queues cmd; returns its command number. Thread-safe; blocks while the stream's driver queue
    // is full (bounded queues: docs/abi.md), never while capturing: then the command goes to the
    // capture instead, and 0 is returned. Throws Error (sticky device fault, also one that ends a
    // wait for room; malformed command; capture invalidated).
    uint64_t submit(const mtiaDrvCommand& cmd) {
        if (CaptureLink* c = capture_.load(std::memory_order_acquire)) [[unlikely]] {
            c->append(*this, CapturedCommand{cmd});
            return 0;
        }
        return submitToDevice(cmd);
    }
    // Queues cmd on the device whether or not the stream is being captured (graph replays); blocks
    // and throws as submit() does.
    uint64_t submitToDevice(const mtiaDrvCommand& cmd);

    // The capture the stream takes part in, if any. Set and cleared by the capture layer only,
    // under its lock; readers that act on it re-check under that lock.
    CaptureLink* capture() const noexcept { return capture_.load(std::memory_order_acquire); }
    bool capturing() const noexcept { return capture() != nullptr; }
    void setCapture(CaptureLink* link) noexcept { capture_.store(link, std::memory_order_release); }
    // Number of the last command submitted so far (0: none). Thread-safe, non-blocking. Throws
    // Error when the driver cannot say.
    uint64_t lastSubmitted() const;
    // Whether command seq has completed. Thread-safe, non-blocking.
    bool completed(uint64_t seq) const;
    // Whether everything submitted before the call has completed. Does not look at device faults.
    bool idle() const;
    // Like idle(), but throws the device's sticky fault first (mtiaStreamQuery).
    bool query() const;
    // Blocks until command seq completed; throws the device's sticky fault.
    // sleep: wait without polling (blocking-sync events).
    void wait(uint64_t seq, bool sleep = false) const;
    // Blocks until everything submitted before the call completed.
    void synchronize(bool sleep = false) const { wait(lastSubmitted(), sleep); }
    // Later work of this stream waits until command seq of other (any device) completed.
    // Nothing is queued when it has completed already. Blocks only while this stream's queue is
    // full.
    void waitFor(const Stream& other, uint64_t seq);
    // Throws the device's sticky fault, if it has one.
    void checkDevice() const;

private:
    const driver::Driver& driver_;
    const int device_;
    const int32_t driverDevice_;
    const int priority_;
    const unsigned flags_;
    const bool isDefault_;
    const int64_t id_;
    mtiaDrvQueue queue_ = nullptr;
    // Drivers that report their queues' counts (queueGetCounts) are asked; for others the stream
    // counts submissions itself, which costs every submission a read-modify-write of a shared
    // counter.
    const bool driverCounts_;
    std::atomic<uint64_t> lastSubmitted_{0};
    std::atomic<CaptureLink*> capture_{nullptr};
};

}  // namespace mtia::streams
