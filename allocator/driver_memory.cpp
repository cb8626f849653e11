#include "allocator/driver_memory.hpp"

#include "core/log.hpp"

#include <algorithm>

namespace mtia::allocator {

namespace {
thread_local std::string lastWhy;

bool outOfMemory(mtiaError_t st) {
    return st == mtiaErrorMemoryAllocation;
}

// Whether item went into list; false when the host is out of memory (the caller gives it back).
template <class T>
bool tryKeep(std::vector<T>& list, T item) noexcept {
    try {
        list.push_back(item);
        return true;
    } catch (...) {
        return false;
    }
}
}  // namespace

uintptr_t Leftovers::takeRange(size_t size) noexcept {
    auto it =
        std::find_if(ranges.begin(), ranges.end(), [&](const auto& r) { return r.second == size; });
    if (it == ranges.end()) return 0;
    const uintptr_t va = it->first;
    ranges.erase(it);
    return va;
}

void Leftovers::absorb(Leftovers& other) {
    ranges.reserve(ranges.size() + other.ranges.size());
    mems.reserve(mems.size() + other.mems.size());
    ranges.insert(ranges.end(), other.ranges.begin(), other.ranges.end());
    mems.insert(mems.end(), other.mems.begin(), other.mems.end());
    other.ranges.clear();
    other.mems.clear();
}

DriverMemory::DriverMemory(const driver::Driver& driver, int device, int32_t driverDevice)
    : driver_(driver), device_(device), driverDevice_(driverDevice) {}

const std::string& DriverMemory::why() const noexcept {
    return lastWhy;
}

bool DriverMemory::findAllocatedWords() noexcept {
    const auto get = driver_.ops().memGetAllocatedWords;
    if (get == nullptr) return false;
    uint64_t* allocated = nullptr;
    uint64_t* peak = nullptr;
    if (get(driverDevice_, &allocated, &peak) != mtiaSuccess || allocated == nullptr ||
        peak == nullptr)
        return false;
    peakWord_ = peak;
    allocatedWord_ = allocated;
    return true;
}

uintptr_t DriverMemory::allocate(size_t size, mtiaDrvMem* mem, Leftovers* keep) {
    uintptr_t va = keep != nullptr ? keep->takeRange(size) : 0;
    if (va == 0) va = reserve(size);
    if (va == 0) return 0;
    auto leave = [&] {
        if (keep == nullptr || !tryKeep(keep->ranges, std::pair{va, size})) unreserve(va, size);
    };
    try {
        *mem = map(va, size, keep);
    } catch (...) {
        leave();
        throw;
    }
    if (*mem == nullptr) {
        const std::string why = lastWhy;
        leave();
        lastWhy = why;
        return 0;
    }
    return va;
}

void DriverMemory::release(uintptr_t va, size_t size, mtiaDrvMem mem) noexcept {
    unmap(va, size, mem);
    unreserve(va, size);
}

void DriverMemory::release(Leftovers& leftovers) noexcept {
    for (mtiaDrvMem mem : leftovers.mems)
        if (driver_.ops().memRelease(mem) != mtiaSuccess)
            log(LogLevel::Error, "device {}: releasing unmapped device memory failed: {}", device_,
                driver_.message());
    for (const auto& [va, size] : leftovers.ranges) unreserve(va, size);
    leftovers.mems.clear();
    leftovers.ranges.clear();
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
        log(LogLevel::Error, "device {}: releasing {} bytes of addresses at {:#x} failed: {}",
            device_, size, va, driver_.message());
}

mtiaDrvMem DriverMemory::map(uintptr_t va, size_t size, Leftovers* keep) {
    const auto& ops = driver_.ops();
    mtiaDrvMem mem = nullptr;
    if (mtiaError_t st = ops.memCreate(driverDevice_, size, &mem); st != mtiaSuccess) {
        lastWhy = driver_.message();
        if (outOfMemory(st)) return nullptr;
        driver_.raise(st, "creating device memory", lastWhy);
    }
    if (mtiaError_t st = ops.memMap(reinterpret_cast<void*>(va), size, mem, 0); st != mtiaSuccess) {
        lastWhy = driver_.message();
        if (keep == nullptr || !tryKeep(keep->mems, mem)) ops.memRelease(mem);
        if (outOfMemory(st)) return nullptr;
        driver_.raise(st, "mapping device memory", lastWhy);
    }
    return mem;
}

void DriverMemory::unmap(uintptr_t va, size_t size, mtiaDrvMem mem) noexcept {
    const auto& ops = driver_.ops();
    if (ops.memUnmap(reinterpret_cast<void*>(va), size) != mtiaSuccess ||
        ops.memRelease(mem) != mtiaSuccess)
        log(LogLevel::Error, "device {}: releasing {} bytes at {:#x} failed: {}", device_, size, va,
            driver_.message());
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
