// plot's page: one self-contained HTML file (inline CSS and SVG, no script
// or style from elsewhere, so it opens offline and can be mailed around) with
// a section per device:
//   1. active memory over time, stacked by allocation site (the sites live at
//      the peak, the rest as "other"), from the trace;
//   2. the segment map: each segment a bar, its blocks coloured by state,
//      hover titles with address, size, state and allocation site;
//   3. the table of the top allocation sites, at the trace's peak and in the
//      snapshot.
// Big snapshots stay drawable: the timeline has at most maxPoints points and
// the map at most maxSegments segments and maxBlocks blocks (a note says what
// was left out).
#pragma once

#include "allocator/snapshot/model.hpp"

#include <cstddef>
#include <string>

namespace mtia::mem {

struct PlotOptions {
    size_t timelineSites = 8;
    size_t tableSites = 10;
    size_t maxPoints = 2000;
    size_t maxSegments = 300;
    size_t maxBlocks = 20000;
};

std::string renderPlot(const Snapshot& snap, const std::string& title,
                       const PlotOptions& options = {});

}  // namespace mtia::mem
