// The caching allocator's settings: PyTorch's PYTORCH_CUDA_ALLOC_CONF keys
// and syntax ("key:value,key:value", list values in brackets, whitespace
// ignored, booleans spelled True or False), read from MTIA_ALLOC_CONF and
// mtiaAllocatorSetConfig. A bad value, an unknown key or a contradictory
// combination is an error that names the key; nothing is half-applied.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace mtia::allocator {

struct AllocConfig {
    static constexpr size_t kMiB = size_t{1} << 20;
    static constexpr size_t kUnlimited = SIZE_MAX;
    // roundup_power2_divisions applies per power-of-two interval of sizes: [1, 2) MiB, [2, 4) MiB,
    // ..., the last one open-ended (sizes below 1 MiB use the first).
    static constexpr size_t kRoundupIntervals = 16;

    size_t maxSplitSize = kUnlimited;  // max_split_size_mb: larger blocks are never split
    size_t maxNonSplitRounding =
        20 * kMiB;  // max_non_split_rounding_mb: slack an oversize block may have
    double garbageCollectionThreshold =
        0.0;  // garbage_collection_threshold: 0 = off, else in (0, 1)
    std::array<uint32_t, kRoundupIntervals>
        roundupDivisions{};                   // roundup_power2_divisions: 0 = none
    bool expandableSegments = false;          // expandable_segments
    double perProcessMemoryFraction = 1.0;    // per_process_memory_fraction, in [0, 1]
    bool releaseLockOnDeviceMalloc = false;   // release_lock_on_device_malloc (or _cudamalloc)
    bool pinnedUseBackgroundThreads = false;  // pinned_use_background_threads

    // base with the settings of conf applied on top. Throws Error(mtiaErrorInvalidValue) whose
    // message names the key (or the malformed part of conf) and what it accepts. Thread-safe
    // (pure).
    static AllocConfig parse(std::string_view conf, const AllocConfig& base);
    static AllocConfig parse(std::string_view conf) { return parse(conf, AllocConfig{}); }

    // Every setting in MTIA_ALLOC_CONF syntax; parse(format()) gives this configuration back.
    // max_split_size_mb and garbage_collection_threshold appear only when set (their defaults, no
    // limit and off, have no spelling).
    std::string format() const;

    // The divisions of the interval that size bytes falls in (0: round to 512 bytes only).
    uint32_t roundupDivisionsFor(size_t size) const {
        if (size < kMiB) return roundupDivisions[0];
        const size_t log2 = static_cast<size_t>(std::bit_width(size)) - 1;  // >= 20
        return roundupDivisions[std::min<size_t>(log2 - 20, kRoundupIntervals - 1)];
    }

    bool operator==(const AllocConfig&) const = default;
};

}  // namespace mtia::allocator
