#include "allocator/size_policy.hpp"

#include "core/error.hpp"

#include <bit>

namespace mtia::allocator {
namespace {

// size rounded up to a multiple of step (a power of two); throws when that overflows.
size_t roundUp(size_t size, size_t step, const char* what) {
    if (size > SIZE_MAX - (step - 1))
        fail(mtiaErrorInvalidValue, "size {} is too large to represent once rounded up to {}", size,
             what);
    return (size + step - 1) & ~(step - 1);
}

// The next of `divisions` equal steps between the powers of two around size (size itself when it is
// a step or a power of two). divisions is a power of two, at least 2.
size_t nextDivision(size_t size, uint32_t divisions) {
    if (std::has_single_bit(size)) return size;
    const size_t floor = std::bit_floor(size);
    const size_t step = floor / divisions;
    if (step == 0) return floor << 1;  // finer steps than bytes: the next power of two
    return roundUp(size, step, "its roundup_power2_divisions step");
}

}  // namespace

size_t roundSizeSlow(size_t size, const AllocConfig& config) {
    if (size < kMinBlockSize) return kMinBlockSize;
    const uint32_t divisions = config.roundupDivisionsFor(size);
    if (divisions > 1 && size > kMinBlockSize * static_cast<size_t>(divisions))
        return nextDivision(size, divisions);
    return roundUp(size, kMinBlockSize, "a multiple of 512 bytes");
}

size_t segmentSize(size_t rounded) {
    if (rounded <= kSmallSize) return kSmallBuffer;
    if (rounded < kMinLargeAlloc) return kLargeBuffer;
    return roundUp(rounded, kRoundLarge, "a multiple of 2 MiB");
}

}  // namespace mtia::allocator
