// The ABI's view of streams and events: handles (generation-counted), stream
// ids that round-trip through mtiaStreamFromId, each device's default stream
// and each thread's current stream per device.
#pragma once

#include "core/handle_table.hpp"
#include "runtime/context/device.hpp"
#include "streams/event.hpp"
#include "streams/stream.hpp"

#include <mtia/mtia_types.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

namespace mtia {

class StreamTable {
public:
    // A stream or event for the duration of one ABI call, without reference counting
    // (HandleTable::Ref).
    using StreamRef = HandleTable<streams::Stream>::Ref;
    using EventRef = HandleTable<streams::Event>::Ref;

    explicit StreamTable(size_t devices);

    // Creates a stream on dev; priority is clamped into the device's range. Thread-safe,
    // non-blocking.
    mtiaStream_t create(Device& dev, unsigned flags, int priority);
    // Invalidates the handle at once; the stream's queued work still runs. Throws InvalidValue
    // (default stream) or InvalidHandle naming argName.
    void destroy(mtiaStream_t handle, const char* argName = "stream");
    // The stream behind a non-NULL handle. Throws InvalidHandle naming argName.
    std::shared_ptr<streams::Stream> get(mtiaStream_t handle, const char* argName = "stream") const;
    // The calling thread's current stream on dev. Throws InvalidHandle when it has been destroyed.
    std::shared_ptr<streams::Stream> current(Device& dev, const char* argName = "stream");
    // get() and current() for the hot paths: one StreamRef per thread at a time.
    StreamRef borrow(mtiaStream_t handle, const char* argName = "stream") const;
    StreamRef borrowCurrent(Device& dev, const char* argName = "stream");
    // The stream with that id. Throws InvalidHandle.
    mtiaStream_t fromId(int64_t id) const;

    // dev's default stream, created (starting the device) on first use, and its handle.
    std::shared_ptr<streams::Stream> defaultStream(Device& dev);
    mtiaStream_t defaultHandle(Device& dev);
    // The calling thread's current stream on dev (the default stream unless set).
    mtiaStream_t currentHandle(Device& dev);
    // Makes handle the calling thread's current stream on its device.
    void setCurrent(mtiaStream_t handle);

    // Events: belong to dev; flags already validated.
    mtiaEvent_t createEvent(const driver::Driver& driver, Device& dev, unsigned flags);
    void destroyEvent(mtiaEvent_t handle);
    // Throws InvalidHandle naming argName (NULL included).
    std::shared_ptr<streams::Event> event(mtiaEvent_t handle, const char* argName = "event") const;
    // event() for the hot paths: one EventRef per thread at a time.
    EventRef borrowEvent(mtiaEvent_t handle, const char* argName = "event") const;

    // mtiaDeviceReset: every stream of device ordinal but its default stream, and every event of
    // it, leaves the table (their handles answer InvalidHandle from now on; objects still borrowed
    // by a call in flight live until it returns). A thread whose current stream on the device was
    // one of them falls back to the default stream. Thread-safe.
    void releaseDevice(int ordinal);

private:
    // Whether handle named a stream that a device reset removed; the calling thread's current
    // stream on device i is then forgotten (it falls back to the default stream). Off the common
    // path: only after a failed lookup of a current stream.
    bool forgetResetCurrent(size_t i, uint64_t handle);
    mtiaStream_t add(std::shared_ptr<streams::Stream> stream);
    // Gives dev's default stream its handle, creating the stream (starting the device) on first
    // use. Inline fast path: every call on the current stream asks.
    void registerDefault(Device& dev) {
        if (defaults_[static_cast<size_t>(dev.ordinal())].load(std::memory_order_acquire) == 0)
            [[unlikely]]
            registerDefaultSlow(dev);
    }
    void registerDefaultSlow(Device& dev);

    HandleTable<streams::Stream> streams_{kTagStream};
    HandleTable<streams::Event> events_{kTagEvent};
    mutable std::mutex idMu_;
    std::unordered_map<int64_t, uint64_t> ids_;  // stream id -> handle
    std::unordered_set<uint64_t> resetStreams_;  // handles removed by device resets; under idMu_
    std::atomic<bool> anyReset_{false};          // resetStreams_ is not empty
    std::mutex defaultMu_;
    std::unique_ptr<std::atomic<uint64_t>[]> defaults_;  // per device; 0 until created
};

}  // namespace mtia
