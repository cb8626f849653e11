// An event's share with other processes (mtia_ipc.h): the driver's IPC event
// behind an exported event (whose records are published to importers) or
// behind an event opened from a handle (whose query, synchronize and stream
// waits follow the exporter's latest record).
//
// Exporter: each record takes a ticket from the driver and appends a host
// function to the recording stream that reports the ticket complete, so the
// importers' view follows the stream's work. A device fault drops queued host
// functions (mtia_driver.h): the ticket then never completes, and importers
// wait until the exporter destroys the event or exits, which ends their waits
// with an error.
//
// Importer: a stream wait is a host function that blocks the importer's queue
// until the ticket completed (or the event died: the wait then ends and the
// next query or synchronize reports the error).
#pragma once

#include "streams/stream.hpp"

#include <mtia/mtia_driver.h>

#include <memory>
#include <mutex>

namespace mtia::streams {

class IpcEventShare : public std::enable_shared_from_this<IpcEventShare> {
public:
    IpcEventShare(const driver::Driver& driver, mtiaDrvIpcEvent event, bool exporter,
                  const mtiaDrvIpcDescriptor& desc);
    // close().
    ~IpcEventShare();
    IpcEventShare(const IpcEventShare&) = delete;
    IpcEventShare& operator=(const IpcEventShare&) = delete;

    bool exporter() const noexcept { return exporter_; }
    // Closes the driver's event, once: for an exporter (its event destroyed) importers' waits fail
    // from now on, and records still queued complete nothing. Thread-safe, non-blocking.
    void close() noexcept;
    // Reports ticket complete unless closed (the host function of a record). Thread-safe.
    void complete(uint64_t ticket) const noexcept;
    const mtiaDrvIpcDescriptor& descriptor() const noexcept { return desc_; }

    // Exporter: publishes a record made on stream (after the work queued there). Non-blocking.
    // Throws the driver's errors.
    void publish(Stream& stream);
    // Importer: whether the exporter's latest record completed. Non-blocking. Throws InvalidHandle
    // (the exporter destroyed the event or exited).
    bool query() const;
    // Importer: blocks until the exporter's latest record (as of the call) completed. Throws
    // InvalidHandle.
    void synchronize() const;
    // Importer: later work of stream waits for the exporter's latest record (as of the call).
    // Non-blocking.
    void enqueueWait(Stream& stream) const;

private:
    const driver::Driver& driver_;
    const mtiaDrvIpcEvent event_;
    const bool exporter_;
    const mtiaDrvIpcDescriptor desc_;
    mutable std::mutex mu_;  // close() against complete()
    bool closed_ = false;
};

}  // namespace mtia::streams
