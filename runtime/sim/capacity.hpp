// How much of a device's memory is handed out. This is the seam for the
// cross-process registry: today the count covers this process only; with the
// registry, charge() becomes a reservation in the shared device record (under
// its lock) and used() the sum over live processes, so memGetInfo and the
// out-of-memory check see every user of the device without any change here.
#pragma once

#include <cstdint>

namespace mtia::sim {

// Not thread-safe: DeviceMemory calls it under its lock.
class Capacity {
 public:
  explicit Capacity(uint64_t total) : total_(total) {}

  // Takes bytes if they fit next to what is used; false (nothing taken) otherwise.
  bool charge(uint64_t bytes) {
    if (bytes > total_ - used_) return false;
    used_ += bytes;
    return true;
  }
  void refund(uint64_t bytes) { used_ -= bytes; }

  uint64_t total() const { return total_; }
  uint64_t used() const { return used_; }

 private:
  uint64_t total_;
  uint64_t used_ = 0;
};

}  // namespace mtia::sim
