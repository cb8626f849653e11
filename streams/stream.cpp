#include "streams/stream.hpp"

#include "core/error.hpp"

namespace mtia::streams {
namespace {

std::atomic<int64_t> gNextStreamId{1};

}  // namespace

Stream::Stream(const driver::Driver& driver, int device, int32_t driverDevice, int priority,
               unsigned flags, bool isDefault)
    : driver_(driver), device_(device), driverDevice_(driverDevice), priority_(priority),
      flags_(flags), isDefault_(isDefault),
      id_(gNextStreamId.fetch_add(1, std::memory_order_relaxed)),
      driverCounts_(driver.countsQueues()) {
    driver_.check(driver_.ops().queueCreate(driverDevice, priority, 0, &queue_),
                  "creating a device queue");
}

Stream::~Stream() {
    driver_.ops().queueDestroy(queue_);
}

uint64_t Stream::submitToDevice(const mtiaDrvCommand& cmd) {
    uint64_t seq = 0;
    driver_.check(driver_.ops().queueSubmit(queue_, &cmd, &seq), "queueing work");
    if (driverCounts_) return seq;
    // Submissions from several threads may finish out of order; keep the max.
    uint64_t prev = lastSubmitted_.load(std::memory_order_relaxed);
    while (prev < seq &&
           !lastSubmitted_.compare_exchange_weak(prev, seq, std::memory_order_acq_rel)) {}
    return seq;
}

uint64_t Stream::lastSubmitted() const {
    if (!driverCounts_) return lastSubmitted_.load(std::memory_order_acquire);
    uint64_t submitted = 0, done = 0;
    driver_.check(driver_.ops().queueGetCounts(queue_, &submitted, &done),
                  "querying a device queue");
    return submitted;
}

bool Stream::idle() const {
    if (!driverCounts_) return completed(lastSubmitted());
    uint64_t submitted = 0, done = 0;
    driver_.check(driver_.ops().queueGetCounts(queue_, &submitted, &done),
                  "querying a device queue");
    return done >= submitted;
}

bool Stream::completed(uint64_t seq) const {
    if (seq == 0) return true;
    uint64_t done = 0;
    driver_.check(driver_.ops().queueQuery(queue_, &done), "querying a device queue");
    return done >= seq;
}

bool Stream::query() const {
    checkDevice();
    return idle();
}

void Stream::checkDevice() const {
    if (mtiaError_t s = driver_.ops().deviceGetStatus(driverDevice_); s != mtiaSuccess)
        driver_.raise(s, fmt::format("device {} has a sticky fault", device_).c_str(),
                      driver_.message());
}

void Stream::wait(uint64_t seq, bool sleep) const {
    if (seq == 0) {
        checkDevice();  // nothing submitted; still report a sticky fault like CUDA does
        return;
    }
    driver_.check(
        driver_.ops().queueWait(queue_, seq, sleep ? MTIA_DRV_WAIT_SLEEP : MTIA_DRV_WAIT_SPIN),
        "waiting for device work");
}

void Stream::waitFor(const Stream& other, uint64_t seq) {
    if (&other == this || other.completed(seq))
        return;  // in-order already, or nothing left to wait for
    mtiaDrvCommand cmd{};
    cmd.type = mtiaDrvCmdWait;
    cmd.u.wait.queue = other.queue();
    cmd.u.wait.value = seq;
    submit(cmd);
}

}  // namespace mtia::streams
