// Device memory straight from the driver: every allocation reserves address
// space, creates physical memory and maps it. The caching allocator replaces
// this (allocator issue) behind the same entry points; the lookup of which
// allocation a pointer lies in stays the same.
#pragma once

#include "runtime/driver/driver.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <shared_mutex>

namespace mtia::allocator {

struct Allocation {
  void* base = nullptr;
  size_t size = 0;      // bytes the caller asked for
  size_t reserved = 0;  // bytes mapped (size rounded up to the granularity)
  int device = -1;
};

class DirectAllocator {
 public:
  DirectAllocator(const driver::Driver& driver, int device, int32_t driverDevice, uint64_t granularity);
  ~DirectAllocator();
  DirectAllocator(const DirectAllocator&) = delete;
  DirectAllocator& operator=(const DirectAllocator&) = delete;

  // size > 0. Thread-safe; blocks in the driver.
  // Throws InvalidValue (size overflows when rounded), MemoryAllocation.
  void* allocate(size_t size);
  // ptr must be the base of a live allocation. Waits for the device's queued
  // work first, so no queued command can touch the memory. Thread-safe.
  // Throws InvalidValue (not a live base pointer), the device's sticky fault.
  void free(void* ptr);
  // The live allocation containing ptr (interior pointers resolve). Thread-safe.
  std::optional<Allocation> find(const void* ptr) const;

 private:
  struct Record {
    Allocation a;
    void* mem;  // mtiaDrvMem
  };
  void release(const Record& r) noexcept;

  const driver::Driver& driver_;
  const int device_;
  const int32_t driverDevice_;
  const uint64_t granularity_;
  mutable std::shared_mutex mu_;
  std::map<uintptr_t, Record> live_;  // by base address
};

}  // namespace mtia::allocator
