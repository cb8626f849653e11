// The one place the caching allocator calls the driver for memory (the
// choke point of PyTorch's XPU allocator, mimalloc's prim layer): address
// reservations, physical allocations mapped into them, and the device's
// memory figures. Out of memory is an answer here (null), not an exception,
// because the allocator's out-of-memory ladder decides what happens next.
#pragma once

#include "platform/driver/driver.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mtia::allocator {

// What the driver gave to calls that then could not use it (the physical memory ran out after the
// addresses were reserved, say), kept instead of given back while nothing may be freed to the
// device (a graph capture is underway); DriverMemory::release(Leftovers&) gives it back later.
struct Leftovers {
    std::vector<std::pair<uintptr_t, size_t>> ranges;  // reservations with nothing mapped
    std::vector<mtiaDrvMem> mems;                      // physical allocations mapped nowhere

    bool empty() const noexcept { return ranges.empty() && mems.empty(); }
    // Takes a kept reservation of exactly size bytes out (0: none).
    uintptr_t takeRange(size_t size) noexcept;
    // Moves everything of other here. Throws std::bad_alloc (both unchanged).
    void absorb(Leftovers& other);
};

class DriverMemory {
public:
    DriverMemory(const driver::Driver& driver, int device, int32_t driverDevice);

    int device() const noexcept { return device_; }

    // size bytes (a multiple of the granularity) reserved, created and mapped: the physical
    // allocation in *mem and the address returned, or 0 when the device is out of memory or
    // addresses (why() says which). Throws Error for other driver failures. Thread-safe; blocks in
    // the driver. keep: when not null, a reservation of size bytes kept there is used instead of a
    // new one, and what a failure (0 or Error) leaves over goes there instead of back to the
    // driver.
    uintptr_t allocate(size_t size, mtiaDrvMem* mem, Leftovers* keep = nullptr);
    // Gives back what allocate() returned. Never throws: failures are logged.
    void release(uintptr_t va, size_t size, mtiaDrvMem mem) noexcept;
    // Gives back everything kept in leftovers and empties it. Never throws: failures are logged.
    void release(Leftovers& leftovers) noexcept;

    // Addresses only (expandable segments): 0 when none are left. Throws Error otherwise.
    uintptr_t reserve(size_t size);
    void unreserve(uintptr_t va, size_t size) noexcept;
    // New physical memory mapped at va (inside a reservation): null when out of memory. keep: as
    // for allocate() (physical memory created but not mapped goes there).
    mtiaDrvMem map(uintptr_t va, size_t size, Leftovers* keep = nullptr);
    void unmap(uintptr_t va, size_t size, mtiaDrvMem mem) noexcept;

    // Tells the driver what the allocator has handed out on the device (for monitoring tools): two
    // stores into the words the driver shares (driver ABI 1.7, memGetAllocatedWords; asked for on
    // the first report, which comes after the first device allocation), else one indirect call when
    // the driver has memReportAllocated (1.3), else nothing. Called under the allocator's lock (one
    // thread at a time). Never throws; errors are ignored.
    void reportAllocated(uint64_t bytes) noexcept {
        if (allocatedWord_ != nullptr || findAllocatedWords()) [[likely]] {
            __atomic_store_n(allocatedWord_, bytes, __ATOMIC_RELEASE);
            // Only this allocator writes the peak (under its lock): the load reads our own store.
            if (bytes > __atomic_load_n(peakWord_, __ATOMIC_RELAXED))
                __atomic_store_n(peakWord_, bytes, __ATOMIC_RELEASE);
            return;
        }
        if (const auto report = driver_.ops().memReportAllocated)
            (void)report(driverDevice_, bytes);
    }
    // The device's free and total bytes, as the driver counts them (every process). Throws Error.
    void info(uint64_t& free, uint64_t& total) const;
    // Waits for all work queued on the device. Returns the device's sticky fault (the reason in
    // why()), or success; memory may be released either way, since faulted work is dropped.
    mtiaError_t synchronize() noexcept;
    // The driver's explanation of the last failed call made through this object on this thread.
    const std::string& why() const noexcept;

private:
    // Asks the driver for the allocated and peak words; false when it has none (yet).
    bool findAllocatedWords() noexcept;

    const driver::Driver& driver_;
    const int device_;
    const int32_t driverDevice_;
    uint64_t* allocatedWord_ = nullptr;  // shared with monitoring tools (driver ABI 1.7), or null
    uint64_t* peakWord_ = nullptr;
};

}  // namespace mtia::allocator
