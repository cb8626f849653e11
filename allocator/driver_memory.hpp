// The one place the caching allocator calls the driver for memory (the
// choke point of PyTorch's XPU allocator, mimalloc's prim layer): address
// reservations, physical allocations mapped into them, and the device's
// memory figures. Out of memory is an answer here (null), not an exception,
// because the allocator's out-of-memory ladder decides what happens next.
#pragma once

#include "runtime/driver/driver.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

namespace mtia::allocator {

class DriverMemory {
 public:
  DriverMemory(const driver::Driver& driver, int device, int32_t driverDevice);

  int device() const noexcept { return device_; }

  // size bytes (a multiple of the granularity) reserved, created and mapped: the physical allocation
  // in *mem and the address returned, or 0 when the device is out of memory or addresses (why() says
  // which). Throws Error for other driver failures. Thread-safe; blocks in the driver.
  uintptr_t allocate(size_t size, mtiaDrvMem* mem);
  // Gives back what allocate() returned. Never throws: failures are logged.
  void release(uintptr_t va, size_t size, mtiaDrvMem mem) noexcept;

  // Addresses only (expandable segments): 0 when none are left. Throws Error otherwise.
  uintptr_t reserve(size_t size);
  void unreserve(uintptr_t va, size_t size) noexcept;
  // New physical memory mapped at va (inside a reservation): null when out of memory.
  mtiaDrvMem map(uintptr_t va, size_t size);
  void unmap(uintptr_t va, size_t size, mtiaDrvMem mem) noexcept;

  // The device's free and total bytes, as the driver counts them (every process). Throws Error.
  void info(uint64_t& free, uint64_t& total) const;
  // Waits for all work queued on the device. Returns the device's sticky fault (the reason in why()),
  // or success; memory may be released either way, since faulted work is dropped.
  mtiaError_t synchronize() noexcept;
  // The driver's explanation of the last failed call made through this object on this thread.
  const std::string& why() const noexcept;

 private:
  const driver::Driver& driver_;
  const int device_;
  const int32_t driverDevice_;
};

}  // namespace mtia::allocator
