#include "streams/event.hpp"

#include "core/error.hpp"
#include "streams/timestamp_slots.hpp"

#include <utility>

namespace mtia::streams {

Event::Event(const driver::Driver& driver, int device, int32_t driverDevice, unsigned flags)
    : driver_(driver), device_(device), driverDevice_(driverDevice), flags_(flags) {}

Event::~Event() {
    // An exported event dies now, even with records queued: importers' waits end with an error.
    if (ipc_ && ipc_->exporter()) ipc_->close();
    TimestampSlots::instance().release(stamp_, std::move(stream_), seq_);
}

bool Event::timing() const noexcept {
    return (flags_ & mtiaEventDisableTiming) == 0;
}

bool Event::blockingSync() const noexcept {
    return (flags_ & mtiaEventBlockingSync) != 0;
}

void Event::checkDevice() const {
    if (mtiaError_t s = driver_.ops().deviceGetStatus(driverDevice_); s != mtiaSuccess)
        driver_.raise(s, fmt::format("device {} has a sticky fault", device_).c_str(),
                      driver_.message());
}

bool Event::imported() const noexcept {
    const IpcEventShare* share = ipc();
    return share != nullptr && !share->exporter();
}

void Event::requireRecordable() const {
    if (imported()) [[unlikely]]
        fail(mtiaErrorNotSupported, "the event was opened from an IPC handle; only the exporting "
                                    "process records it (it may query, "
                                    "synchronize and wait for it)");
}

void Event::record(Stream& stream) {
    requireRecordable();
    IpcEventShare* share = ipc();
    if (stream.device() != device_)
        fail(mtiaErrorInvalidHandle, "stream belongs to device {} but the event to device {}",
             stream.device(), device_);
    stream.checkDevice();
    uint64_t seq = stream.lastSubmitted();
    uint64_t* stamp = nullptr;
    if (timing()) {
        TimestampSlots& slots = TimestampSlots::instance();
        stamp = slots.acquire();
        try {
            uint64_t now = 0;
            // An idle stream's snapshot is complete already: stamp it here instead of queueing a
            // command. The host clock is the device's (clockNow), so later device stamps on the
            // stream are not earlier.
            if (stream.completed(seq) && driver_.ops().clockNow(&now) == mtiaSuccess) {
                *stamp = now;
            } else {
                mtiaDrvCommand cmd{};
                cmd.type = mtiaDrvCmdTimestamp;
                cmd.u.timestamp.out = stamp;
                seq = stream.submit(cmd);
            }
        } catch (...) {
            slots.release(stamp, nullptr, 0);
            throw;
        }
    }
    // Re-recording on the stream of the last record (the common case) swaps no reference.
    std::shared_ptr<Stream> newStream;
    std::shared_ptr<Stream> oldStream;  // released after the lock
    std::shared_ptr<const CaptureMark> oldMark;
    uint64_t oldSeq = 0;
    uint64_t* oldStamp = nullptr;
    for (;;) {
        {
            std::lock_guard lock(mu_);
            if (stream_.get() == &stream || newStream) {
                if (newStream) {
                    oldStream = std::move(stream_);
                    stream_ = std::move(newStream);
                }
                oldSeq = std::exchange(seq_, seq);
                oldStamp = std::exchange(stamp_, stamp);
                if (captureMark_) [[unlikely]]
                    oldMark = std::move(captureMark_);
                if (oldStamp != nullptr && !oldStream)
                    oldStream = stream_;  // the same stream: slots need a reference
                break;
            }
        }
        newStream = stream.shared_from_this();
    }
    if (oldStamp != nullptr)
        TimestampSlots::instance().release(oldStamp, std::move(oldStream), oldSeq);
    if (share != nullptr) [[unlikely]]
        share->publish(stream);
}

void Event::setIpc(std::shared_ptr<IpcEventShare> share) {
    std::shared_ptr<Stream> pending;
    {
        std::lock_guard lock(mu_);
        if (ipc_) return;
        ipc_ = share;
        ipcRaw_.store(share.get(), std::memory_order_release);
        if (share->exporter()) pending = stream_;
    }
    // Conservative: the host function runs after everything queued on the stream by now.
    if (pending) share->publish(*pending);
}

std::shared_ptr<const CaptureMark> Event::captureMark() const {
    std::lock_guard lock(mu_);
    return captureMark_;
}

void Event::setCaptureMark(std::shared_ptr<const CaptureMark> mark) {
    {
        std::lock_guard lock(mu_);
        captureMark_.swap(mark);
    }
    // the previous mark is released outside the lock
}

bool Event::recorded() const {
    std::lock_guard lock(mu_);
    return stream_ != nullptr;
}

Event::Snapshot Event::snapshot() const {
    std::lock_guard lock(mu_);
    return Snapshot{stream_, seq_};
}

bool Event::query() const {
    if (const IpcEventShare* share = ipc(); share != nullptr && !share->exporter()) [[unlikely]]
        return share->query();
    checkDevice();
    // The driver is asked outside the lock (a driver may block briefly); the snapshot's reference
    // keeps the stream alive should a concurrent re-record replace it.
    const Snapshot s = snapshot();
    return !s.stream || s.stream->completed(s.seq);
}

void Event::synchronize() const {
    if (const IpcEventShare* share = ipc(); share != nullptr && !share->exporter()) [[unlikely]]
        return share->synchronize();
    const Snapshot s = snapshot();
    if (!s.stream) {
        checkDevice();
        return;
    }
    s.stream->wait(s.seq, blockingSync());
}

void Event::enqueueWait(Stream& stream) const {
    stream.checkDevice();
    if (const IpcEventShare* share = ipc(); share != nullptr && !share->exporter()) [[unlikely]]
        return share->enqueueWait(stream);
    const Snapshot s = snapshot();
    if (!s.stream || s.seq == 0) return;  // never recorded, or recorded with nothing before it
    stream.waitFor(*s.stream, s.seq);
}

bool Event::completedStamp(uint64_t& ns) const {
    for (;;) {
        Snapshot s;
        const uint64_t* stamp = nullptr;
        {
            std::lock_guard lock(mu_);
            s = Snapshot{stream_, seq_};
            stamp = stamp_;
        }
        if (!s.stream->completed(s.seq)) return false;  // the driver is asked outside the lock
        // The slot is read under the lock, and only while it still belongs to the latest record:
        // once a record is replaced its slot may be recycled and overwritten.
        std::lock_guard lock(mu_);
        if (stamp_ == stamp && stream_ == s.stream && seq_ == s.seq) {
            ns = *stamp;
            return true;
        }
        // Re-recorded meanwhile: look at the new record.
    }
}

float Event::elapsedMs(const Event& start, const Event& end) {
    const char* names[2] = {"start", "end"};
    const Event* events[2] = {&start, &end};
    for (int i = 0; i < 2; ++i) {
        if (!events[i]->timing())
            fail(mtiaErrorInvalidHandle,
                 "{} was created with mtiaEventDisableTiming and has no timestamps", names[i]);
    }
    if (start.device_ != end.device_)
        fail(mtiaErrorInvalidValue,
             "start belongs to device {} and end to device {}; their clocks are not comparable",
             start.device_, end.device_);
    for (int i = 0; i < 2; ++i) {
        if (!events[i]->snapshot().stream)
            fail(mtiaErrorInvalidHandle, "{} has never been recorded", names[i]);
    }
    start.checkDevice();
    uint64_t ns[2] = {0, 0};
    for (int i = 0; i < 2; ++i) {
        if (!events[i]->completedStamp(ns[i]))
            throw Error(mtiaErrorNotReady,
                        fmt::format("{}'s record has not completed yet", names[i]));
    }
    const auto diff = static_cast<int64_t>(ns[1] - ns[0]);
    return static_cast<float>(static_cast<double>(diff) / 1e6);
}

}  // namespace mtia::streams
