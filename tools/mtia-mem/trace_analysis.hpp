// What a snapshot's device_traces say about each device: the peak of live
// bytes (live_memory.hpp defines live and the blocks from before the trace),
// when it was and what was live then by allocation site, allocation and free
// counts and rates, and the out-of-memory entries.
#pragma once

#include "allocator/snapshot/model.hpp"
#include "site_tally.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mtia::mem {

struct OomEntry {
    double timeUs = 0;
    uint64_t size = 0;        // the rounded request that failed
    uint64_t deviceFree = 0;  // what the device had free then
    uint64_t stream = 0;
    StackId stack = 0;
};

struct DeviceTraceReport {
    int device = 0;
    size_t entries = 0;
    bool timed = false;              // entries carry time_us (PyTorch 2.0's do not)
    double firstUs = 0, lastUs = 0;  // the first and last time_us of the trace
    uint64_t preludeBytes = 0;       // live before the first entry
    size_t preludeBlocks = 0;
    uint64_t peakBytes = 0;
    std::optional<size_t>
        peakEntry;      // the entry after which the peak was first reached; none: before the first
    double peakUs = 0;  // its time_us (the first entry's for a peak before the trace)
    uint64_t endBytes = 0;  // live after the last entry
    uint64_t allocs = 0, frees = 0;
    SiteTally liveAtPeak;
    std::vector<OomEntry> ooms;

    double spanSeconds() const { return timed ? (lastUs - firstUs) / 1e6 : 0; }
    // Per second over the trace's span, or nullopt when the span is empty or unknown.
    std::optional<double> rate(uint64_t count) const {
        const double span = spanSeconds();
        return span > 0 ? std::optional<double>(double(count) / span) : std::nullopt;
    }
};

// One per device whose trace has entries, by device ordinal.
std::vector<DeviceTraceReport> analyzeTraces(const Snapshot& snap);

// time_us as "2026-11-24T21:48:44.123456Z" (UTC), or "<n> us" when it is no date.
std::string isoTime(double us);

}  // namespace mtia::mem
