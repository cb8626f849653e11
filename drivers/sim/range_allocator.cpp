#include "range_allocator.hpp"

#include <iterator>

namespace mtia::sim {

RangeAllocator::RangeAllocator(uint64_t begin, uint64_t size)
    : begin_(begin), size_(size), freeBytes_(size) {
    if (size > 0) free_.emplace(begin, size);
}

std::optional<uint64_t> RangeAllocator::allocate(uint64_t size, uint64_t alignment) {
    if (size == 0 || alignment == 0 || (alignment & (alignment - 1)) != 0) return std::nullopt;
    for (auto it = free_.begin(); it != free_.end(); ++it) {
        const uint64_t start = it->first;
        const uint64_t end = start + it->second;
        if (start > UINT64_MAX - (alignment - 1)) break;
        const uint64_t aligned = (start + alignment - 1) & ~(alignment - 1);
        if (aligned >= end || end - aligned < size) continue;
        // Split into the unaligned head (kept in place) and the tail after the allocation.
        if (aligned > start) {
            it->second = aligned - start;
        } else {
            free_.erase(it);
        }
        if (aligned + size < end) free_.emplace(aligned + size, end - (aligned + size));
        freeBytes_ -= size;
        return aligned;
    }
    return std::nullopt;
}

bool RangeAllocator::release(uint64_t start, uint64_t size) {
    if (size == 0 || start < begin_ || start - begin_ > size_ || size > size_ - (start - begin_))
        return false;
    const uint64_t end = start + size;
    auto next = free_.lower_bound(start);
    if (next != free_.end() && next->first < end) return false;
    auto prev = next == free_.begin() ? free_.end() : std::prev(next);
    if (prev != free_.end() && prev->first + prev->second > start) return false;

    const bool joinPrev = prev != free_.end() && prev->first + prev->second == start;
    const bool joinNext = next != free_.end() && next->first == end;
    if (joinPrev) {
        prev->second += size + (joinNext ? next->second : 0);
    } else {
        free_.emplace_hint(next, start, size + (joinNext ? next->second : 0));
    }
    if (joinNext) free_.erase(next);
    freeBytes_ += size;
    return true;
}

}  // namespace mtia::sim
