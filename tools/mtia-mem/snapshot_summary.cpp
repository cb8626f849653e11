#include "snapshot_summary.hpp"

#include <algorithm>
#include <map>
#include <tuple>

namespace mtia::mem {

std::vector<DeviceSummary> summarize(const Snapshot& snap) {
    std::map<int, DeviceSummary> devices;
    std::map<std::tuple<int, uint64_t, uint64_t>, PoolUsage> pools;
    for (const Segment& seg : snap.segments) {
        DeviceSummary& d = devices[seg.device];
        d.device = seg.device;
        ++d.segments;
        d.expandableSegments += seg.expandable;
        d.reserved += seg.totalSize;
        uint64_t allocated = 0;
        for (const Block& b : seg.blocks) {
            switch (b.state) {
            case BlockState::ActiveAllocated:
                allocated += b.size;
                d.active += b.size;
                d.sites.add(b.stack, b.size);
                break;
            case BlockState::ActivePendingFree: d.active += b.size; break;
            case BlockState::Inactive:
                d.inactive += b.size;
                if (seg.blocks.size() > 1) d.inactiveSplit += b.size;
                d.largestFree = std::max(d.largestFree, b.size);
                break;
            case BlockState::Other: break;
            }
        }
        d.allocated += allocated;
        if (seg.poolId[0] != 0 || seg.poolId[1] != 0) {
            PoolUsage& p = pools[{seg.device, seg.poolId[0], seg.poolId[1]}];
            p.id[0] = seg.poolId[0];
            p.id[1] = seg.poolId[1];
            ++p.segments;
            p.reserved += seg.totalSize;
            p.allocated += allocated;
        }
    }
    for (const auto& [key, pool] : pools) devices[std::get<0>(key)].privatePools.push_back(pool);
    std::vector<DeviceSummary> out;
    for (auto& [device, summary] : devices) out.push_back(std::move(summary));
    return out;
}

}  // namespace mtia::mem
