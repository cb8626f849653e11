#include "streams/stream.hpp"

#include "runtime/core/error.hpp"

namespace mtia::streams {

Stream::Stream(const driver::Driver& driver, int device, int32_t driverDevice, int priority, unsigned flags)
    : driver_(driver), device_(device), driverDevice_(driverDevice), priority_(priority), flags_(flags) {
  driver_.check(driver_.ops().queueCreate(driverDevice, priority, 0, &queue_), "creating a device queue");
}

Stream::~Stream() { driver_.ops().queueDestroy(queue_); }

uint64_t Stream::submit(const mtiaDrvCommand& cmd) {
  uint64_t seq = 0;
  driver_.check(driver_.ops().queueSubmit(queue_, &cmd, &seq), "queueing work");
  // Submissions from several threads may finish out of order; keep the max.
  uint64_t prev = lastSubmitted_.load(std::memory_order_relaxed);
  while (prev < seq && !lastSubmitted_.compare_exchange_weak(prev, seq, std::memory_order_acq_rel)) {
  }
  return seq;
}

bool Stream::completed(uint64_t seq) const {
  uint64_t done = 0;
  driver_.check(driver_.ops().queueQuery(queue_, &done), "querying a device queue");
  return done >= seq;
}

void Stream::wait(uint64_t seq, bool sleep) const {
  if (seq == 0) {
    // Nothing submitted; still report a sticky fault like CUDA does.
    std::string why;
    if (mtiaError_t s = driver_.deviceStatus(driverDevice_, &why); s != mtiaSuccess)
      driver_.raise(s, "device fault", why);
    return;
  }
  driver_.check(driver_.ops().queueWait(queue_, seq, sleep ? MTIA_DRV_WAIT_SLEEP : MTIA_DRV_WAIT_SPIN),
                "waiting for device work");
}

}  // namespace mtia::streams
