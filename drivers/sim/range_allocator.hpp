// First-fit allocation of aligned ranges from one contiguous span, with
// coalescing on release. Used for both device virtual addresses and offsets in
// a device's memfd; the numbers are absolute so that alignment of an address
// range means alignment of the addresses themselves.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

namespace mtia::sim {

// Not thread-safe: the owner locks.
class RangeAllocator {
public:
    RangeAllocator() = default;
    RangeAllocator(uint64_t begin, uint64_t size);

    // The lowest-addressed range of size bytes starting at a multiple of alignment (a power of
    // two); nullopt when size is 0, alignment is not a power of two, or no free range fits.
    std::optional<uint64_t> allocate(uint64_t size, uint64_t alignment);
    // Returns [start, start+size) to the free space; false (and nothing changes) when that range is
    // empty, leaves the span or overlaps free space (a double release).
    bool release(uint64_t start, uint64_t size);

    uint64_t freeBytes() const { return freeBytes_; }
    size_t freeRangeCount() const { return free_.size(); }
    uint64_t begin() const { return begin_; }
    uint64_t size() const { return size_; }

private:
    uint64_t begin_ = 0;
    uint64_t size_ = 0;
    uint64_t freeBytes_ = 0;
    std::map<uint64_t, uint64_t> free_;  // start -> length, disjoint and never adjacent
};

}  // namespace mtia::sim
