#include "allocator/driver_memory.hpp"

#include "runtime/core/log.hpp"

namespace mtia::allocator {

namespace {
thread_local std::string lastWhy;

bool outOfMemory(mtiaError_t st) { return st == mtiaErrorMemoryAllocation; }
}  // namespace

DriverMemory::DriverMemory(const driver::Driver& driver, int device, int32_t driverDevice)
    : driver_(driver), device_(device), driverDevice_(driverDevice) {}

const std::string& DriverMemory::why() const noexcept { return lastWhy; }

uintptr_t DriverMemory::allocate(size_t size, mtiaDrvMem* mem) {
  const uintptr_t va = reserve(size);
  if (va == 0) return 0;
  *mem = map(va, size);
  if (*mem == nullptr) {
    const std::string why = lastWhy;
    unreserve(va, size);
    lastWhy = why;
    return 0;
  }
  return va;
}

void DriverMemory::release(uintptr_t va, size_t size, mtiaDrvMem mem) noexcept {
  unmap(va, size, mem);
  unreserve(va, size);
}

uintptr_t DriverMemory::reserve(size_t size) {
  void* va = nullptr;
  const mtiaError_t st = driver_.ops().vaReserve(driverDevice_, size, 0, &va);
  if (st == mtiaSuccess) return reinterpret_cast<uintptr_t>(va);
  lastWhy = driver_.message();
  if (outOfMemory(st)) return 0;
  driver_.raise(st, "reserving device addresses", lastWhy);
}

void DriverMemory::unreserve(uintptr_t va, size_t size) noexcept {
  if (driver_.ops().vaRelease(driverDevice_, reinterpret_cast<void*>(va), size) != mtiaSuccess)
    log(LogLevel::Error, "device {}: releasing {} bytes of addresses at {:#x} failed: {}", device_, size, va,
        driver_.message());
}

mtiaDrvMem DriverMemory::map(uintptr_t va, size_t size) {
  const auto& ops = driver_.ops();
  mtiaDrvMem mem = nullptr;
  if (mtiaError_t st = ops.memCreate(driverDevice_, size, &mem); st != mtiaSuccess) {
    lastWhy = driver_.message();
    if (outOfMemory(st)) return nullptr;
    driver_.raise(st, "creating device memory", lastWhy);
  }
  if (mtiaError_t st = ops.memMap(reinterpret_cast<void*>(va), size, mem, 0); st != mtiaSuccess) {
    lastWhy = driver_.message();
    ops.memRelease(mem);
    if (outOfMemory(st)) return nullptr;
    driver_.raise(st, "mapping device memory", lastWhy);
  }
  return mem;
}

void DriverMemory::unmap(uintptr_t va, size_t size, mtiaDrvMem mem) noexcept {
  const auto& ops = driver_.ops();
  if (ops.memUnmap(reinterpret_cast<void*>(va), size) != mtiaSuccess || ops.memRelease(mem) != mtiaSuccess)
    log(LogLevel::Error, "device {}: releasing {} bytes at {:#x} failed: {}", device_, size, va, driver_.message());
}

void DriverMemory::info(uint64_t& free, uint64_t& total) const {
  driver_.check(driver_.ops().memGetInfo(driverDevice_, &free, &total), "reading device memory");
}

mtiaError_t DriverMemory::synchronize() noexcept {
  const mtiaError_t st = driver_.ops().deviceSynchronize(driverDevice_);
  if (st != mtiaSuccess) lastWhy = driver_.message();
  return st;
}

}  // namespace mtia::allocator
