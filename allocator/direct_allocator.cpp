#include "allocator/direct_allocator.hpp"

#include "runtime/core/error.hpp"
#include "runtime/core/log.hpp"

#include <mutex>

namespace mtia::allocator {

DirectAllocator::DirectAllocator(const driver::Driver& driver, int device, int32_t driverDevice, uint64_t granularity)
    : driver_(driver), device_(device), driverDevice_(driverDevice), granularity_(granularity ? granularity : 1) {}

DirectAllocator::~DirectAllocator() {
  for (auto& [base, r] : live_) release(r);
}

void* DirectAllocator::allocate(size_t size) {
  if (size > SIZE_MAX - granularity_ + 1)
    fail(mtiaErrorInvalidValue, "size {} is too large (rounding to the {}-byte granularity overflows)", size,
         granularity_);
  const uint64_t rounded = (size + granularity_ - 1) / granularity_ * granularity_;
  const auto& ops = driver_.ops();
  // Out of addresses or out of physical memory: both are the caller's OOM.
  // why is captured before cleanup calls replace the driver's message.
  auto raise = [&](mtiaError_t st, const char* what, const std::string& why) {
    if (st == mtiaErrorMemoryAllocation)
      fail(st, "out of memory on device {}: cannot allocate {} bytes ({})", device_, size, why);
    driver_.raise(st, what, why);
  };
  void* va = nullptr;
  mtiaDrvMem mem = nullptr;
  if (mtiaError_t st = ops.vaReserve(driverDevice_, rounded, 0, &va); st != mtiaSuccess)
    raise(st, "reserving device addresses", driver_.message());
  if (mtiaError_t st = ops.memCreate(driverDevice_, rounded, &mem); st != mtiaSuccess) {
    const std::string why = driver_.message();
    ops.vaRelease(driverDevice_, va, rounded);
    raise(st, "creating device memory", why);
  }
  if (mtiaError_t st = ops.memMap(va, rounded, mem, 0); st != mtiaSuccess) {
    const std::string why = driver_.message();
    ops.memRelease(mem);
    ops.vaRelease(driverDevice_, va, rounded);
    raise(st, "mapping device memory", why);
  }
  const Record r{Allocation{va, size, rounded, device_}, mem};
  try {
    std::unique_lock lock(mu_);
    live_[reinterpret_cast<uintptr_t>(va)] = r;
  } catch (...) {
    release(r);
    throw;
  }
  return va;
}

void DirectAllocator::free(void* ptr) {
  Record r;
  {
    std::unique_lock lock(mu_);
    auto it = live_.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == live_.end()) {
      lock.unlock();
      if (auto inside = find(ptr))
        fail(mtiaErrorInvalidValue, "ptr {} points inside the allocation at {}; pass the pointer mtiaMalloc returned",
             ptr, inside->base);
      fail(mtiaErrorInvalidValue, "ptr {} is not a live allocation of device {} (never allocated or already freed)",
           ptr, device_);
    }
    r = it->second;
    live_.erase(it);
  }
  // Queued work may still use the memory; on a faulted device the queued work
  // was dropped, so the memory is released either way and the fault reported.
  const mtiaError_t st = driver_.ops().deviceSynchronize(driverDevice_);
  const std::string why = st == mtiaSuccess ? "" : driver_.message();
  release(r);
  if (st != mtiaSuccess)
    driver_.raise(st, fmt::format("device {} has a sticky fault (the memory was released)", device_).c_str(), why);
}

void DirectAllocator::release(const Record& r) noexcept {
  const auto& ops = driver_.ops();
  auto mem = static_cast<mtiaDrvMem>(r.mem);
  if (ops.memUnmap(r.a.base, r.a.reserved) != mtiaSuccess || ops.memRelease(mem) != mtiaSuccess ||
      ops.vaRelease(driverDevice_, r.a.base, r.a.reserved) != mtiaSuccess)
    log(LogLevel::Error, "device {}: releasing {} bytes at {} failed: {}", device_, r.a.reserved, r.a.base,
        driver_.message());
}

std::optional<Allocation> DirectAllocator::find(const void* ptr) const {
  const auto p = reinterpret_cast<uintptr_t>(ptr);
  std::shared_lock lock(mu_);
  auto it = live_.upper_bound(p);
  if (it == live_.begin()) return std::nullopt;
  --it;
  const Allocation& a = it->second.a;
  if (p >= it->first + a.size && !(a.size == 0 && p == it->first)) return std::nullopt;
  return a;
}

}  // namespace mtia::allocator
