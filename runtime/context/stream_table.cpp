#include "runtime/context/stream_table.hpp"

#include "core/error.hpp"

#include <algorithm>

namespace mtia {
namespace {

// The calling thread's current stream handle per device ordinal; 0 = the default stream. A fixed
// array: trivially destructible, so it stays usable after exit() destroyed the main thread's
// thread-locals (static destructors may still call the runtime).
constexpr size_t kMaxCurrentDevices = 256;
thread_local uint64_t tCurrentStreams[kMaxCurrentDevices];

}  // namespace

StreamTable::StreamTable(size_t devices)
    : defaults_(std::make_unique<std::atomic<uint64_t>[]>(devices)) {}

mtiaStream_t StreamTable::add(std::shared_ptr<streams::Stream> stream) {
    const int64_t id = stream->id();
    const uint64_t h = streams_.insert(std::move(stream));
    try {
        std::lock_guard lock(idMu_);
        ids_.emplace(id, h);
    } catch (...) {
        streams_.remove(h);
        throw;
    }
    return toHandle<mtiaStream_t>(h);
}

mtiaStream_t StreamTable::create(Device& dev, unsigned flags, int priority) {
    const mtiaDrvDeviceInfo& info = dev.info();
    const int clamped = std::clamp(priority, static_cast<int>(info.priorityGreatest),
                                   static_cast<int>(info.priorityLeast));
    dev.checkHealthy();
    return add(std::make_shared<streams::Stream>(dev.driver(), dev.ordinal(), dev.driverDevice(),
                                                 clamped, flags));
}

std::shared_ptr<streams::Stream> StreamTable::get(mtiaStream_t handle, const char* argName) const {
    std::shared_ptr<streams::Stream> s = streams_.lookup(fromHandle(handle));
    if (!s)
        fail(mtiaErrorInvalidHandle, "{} {} is not a live stream (stale, destroyed or foreign)",
             argName, fmt::ptr(handle));
    return s;
}

void StreamTable::destroy(mtiaStream_t handle, const char* argName) {
    std::shared_ptr<streams::Stream> s = get(handle, argName);
    if (s->isDefault())
        fail(mtiaErrorInvalidValue,
             "{} is the default stream of device {}, which cannot be destroyed", argName,
             s->device());
    if (!streams_.remove(fromHandle(handle)))  // another thread destroyed it meanwhile
        fail(mtiaErrorInvalidHandle, "{} {} is not a live stream (destroyed concurrently)", argName,
             fmt::ptr(handle));
    std::lock_guard lock(idMu_);
    ids_.erase(s->id());
    // s goes out of scope here unless an event record or a timestamp still refers to it; its driver
    // queue is released with the last reference and keeps running what was queued.
}

void StreamTable::registerDefaultSlow(Device& dev) {
    std::atomic<uint64_t>& h = defaults_[static_cast<size_t>(dev.ordinal())];
    std::lock_guard lock(defaultMu_);
    if (h.load(std::memory_order_relaxed) == 0)
        h.store(fromHandle(add(dev.defaultStreamShared())), std::memory_order_release);
}

std::shared_ptr<streams::Stream> StreamTable::defaultStream(Device& dev) {
    registerDefault(dev);
    return dev.defaultStreamShared();
}

mtiaStream_t StreamTable::defaultHandle(Device& dev) {
    registerDefault(dev);
    return toHandle<mtiaStream_t>(
        defaults_[static_cast<size_t>(dev.ordinal())].load(std::memory_order_acquire));
}

mtiaStream_t StreamTable::currentHandle(Device& dev) {
    const auto i = static_cast<size_t>(dev.ordinal());
    if (i < kMaxCurrentDevices && tCurrentStreams[i] != 0) {
        const uint64_t h = tCurrentStreams[i];
        if (!anyReset_.load(std::memory_order_acquire) || streams_.lookup(h) ||
            !forgetResetCurrent(i, h))
            return toHandle<mtiaStream_t>(h);
    }
    return defaultHandle(dev);
}

void StreamTable::setCurrent(mtiaStream_t handle) {
    if (handle == nullptr) return;  // NULL names the current stream: nothing changes
    std::shared_ptr<streams::Stream> s = get(handle, "stream");
    const auto i = static_cast<size_t>(s->device());
    if (i >= kMaxCurrentDevices)
        fail(mtiaErrorNotSupported,
             "current streams are kept for devices 0 to {}; the stream is on device {}",
             kMaxCurrentDevices - 1, i);
    tCurrentStreams[i] = s->isDefault() ? 0 : fromHandle(handle);
}

std::shared_ptr<streams::Stream> StreamTable::current(Device& dev, const char* argName) {
    const auto i = static_cast<size_t>(dev.ordinal());
    if (i < kMaxCurrentDevices && tCurrentStreams[i] != 0) {
        if (std::shared_ptr<streams::Stream> s = streams_.lookup(tCurrentStreams[i])) return s;
        if (forgetResetCurrent(i, tCurrentStreams[i])) return defaultStream(dev);
        fail(mtiaErrorInvalidHandle,
             "{} is NULL, and the current stream of device {} has been destroyed", argName,
             dev.ordinal());
    }
    return defaultStream(dev);
}

StreamTable::StreamRef StreamTable::borrow(mtiaStream_t handle, const char* argName) const {
    StreamRef s = streams_.borrow(fromHandle(handle));
    if (!s)
        fail(mtiaErrorInvalidHandle, "{} {} is not a live stream (stale, destroyed or foreign)",
             argName, fmt::ptr(handle));
    return s;
}

StreamTable::StreamRef StreamTable::borrowCurrent(Device& dev, const char* argName) {
    const auto i = static_cast<size_t>(dev.ordinal());
    if (i < kMaxCurrentDevices && tCurrentStreams[i] != 0) {
        if (StreamRef s = streams_.borrow(tCurrentStreams[i])) return s;
        if (forgetResetCurrent(i, tCurrentStreams[i])) {
            registerDefault(dev);
            return StreamRef(&dev.defaultStream());
        }
        fail(mtiaErrorInvalidHandle,
             "{} is NULL, and the current stream of device {} has been destroyed", argName,
             dev.ordinal());
    }
    registerDefault(dev);
    return StreamRef(&dev.defaultStream());  // the device keeps its default stream for good
}

bool StreamTable::forgetResetCurrent(size_t i, uint64_t handle) {
    {
        std::lock_guard lock(idMu_);
        if (!resetStreams_.contains(handle)) return false;
    }
    tCurrentStreams[i] = 0;
    return true;
}

void StreamTable::releaseDevice(int ordinal) {
    // Objects are destroyed outside the locks (a stream's destructor releases its driver queue).
    std::vector<std::shared_ptr<streams::Stream>> streams;
    for (auto& [h, s] : streams_.entries()) {
        if (s->device() != ordinal || s->isDefault()) continue;
        if (!streams_.remove(h)) continue;  // destroyed concurrently
        std::lock_guard lock(idMu_);
        ids_.erase(s->id());
        resetStreams_.insert(h);
        anyReset_.store(true, std::memory_order_release);
        streams.push_back(std::move(s));
    }
    std::vector<std::shared_ptr<streams::Event>> events;
    for (auto& [h, e] : events_.entries()) {
        if (e->device() != ordinal) continue;
        if (events_.remove(h)) events.push_back(std::move(e));
    }
}

mtiaStream_t StreamTable::fromId(int64_t id) const {
    std::lock_guard lock(idMu_);
    auto it = ids_.find(id);
    if (it == ids_.end()) fail(mtiaErrorInvalidHandle, "id {} is not the id of a live stream", id);
    return toHandle<mtiaStream_t>(it->second);
}

mtiaEvent_t StreamTable::createEvent(const driver::Driver& driver, Device& dev, unsigned flags) {
    return toHandle<mtiaEvent_t>(events_.insert(
        std::make_shared<streams::Event>(driver, dev.ordinal(), dev.driverDevice(), flags)));
}

void StreamTable::destroyEvent(mtiaEvent_t handle) {
    if (!events_.remove(fromHandle(handle)))
        fail(mtiaErrorInvalidHandle, "event {} is not a live event (stale, destroyed or foreign)",
             fmt::ptr(handle));
}

StreamTable::EventRef StreamTable::borrowEvent(mtiaEvent_t handle, const char* argName) const {
    if (handle == nullptr) fail(mtiaErrorInvalidHandle, "{} is NULL", argName);
    EventRef e = events_.borrow(fromHandle(handle));
    if (!e)
        fail(mtiaErrorInvalidHandle, "{} {} is not a live event (stale, destroyed or foreign)",
             argName, fmt::ptr(handle));
    return e;
}

std::shared_ptr<streams::Event> StreamTable::event(mtiaEvent_t handle, const char* argName) const {
    if (handle == nullptr) fail(mtiaErrorInvalidHandle, "{} is NULL", argName);
    std::shared_ptr<streams::Event> e = events_.lookup(fromHandle(handle));
    if (!e)
        fail(mtiaErrorInvalidHandle, "{} {} is not a live event (stale, destroyed or foreign)",
             argName, fmt::ptr(handle));
    return e;
}

}  // namespace mtia
