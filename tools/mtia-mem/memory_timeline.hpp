// A device's live bytes over time, split by allocation site, cut down to a
// bounded number of points for drawing: plot's "active memory" chart.
#pragma once

#include "allocator/snapshot/model.hpp"
#include "trace_analysis.hpp"

#include <cstdint>
#include <vector>

namespace mtia::mem {

struct Timeline {
    bool timed = false;  // x is seconds from the first entry; else the entry's index
    std::vector<StackId>
        sites;  // the series, largest at the peak first; one more series holds the rest
    std::vector<double> x;
    std::vector<std::vector<uint64_t>>
        bytes;  // per point: live bytes of each site, then of the rest
};

// topSites: the sites live at the peak that get a series of their own. maxPoints: at most this many
// points; a trace longer than that is cut into spans, each drawn by its lowest and its highest
// point (in their order), so that no peak or trough is lost.
Timeline buildTimeline(const Snapshot& snap, const DeviceTraceReport& report, size_t topSites,
                       size_t maxPoints);

}  // namespace mtia::mem
