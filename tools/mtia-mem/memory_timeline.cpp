#include "memory_timeline.hpp"

#include "live_memory.hpp"

#include <algorithm>
#include <numeric>
#include <unordered_map>

namespace mtia::mem {

namespace {

struct Point {
    size_t index = 0;  // entries applied
    double x = 0;
    uint64_t total = 0;
    std::vector<int64_t> bytes;
};

}  // namespace

Timeline buildTimeline(const Snapshot& snap, const DeviceTraceReport& report, size_t topSites,
                       size_t maxPoints) {
    const auto& entries = snap.deviceTraces[static_cast<size_t>(report.device)];
    Timeline t;
    t.timed = report.timed;
    const std::vector<SiteTotal> top = report.liveAtPeak.sorted();
    std::unordered_map<StackId, size_t> seriesOf;
    for (size_t i = 0; i < std::min(topSites, top.size()); ++i) {
        t.sites.push_back(top[i].stack);
        seriesOf.emplace(top[i].stack, i);
    }
    const size_t rest = t.sites.size();
    auto series = [&](StackId stack) {
        const auto it = seriesOf.find(stack);
        return it != seriesOf.end() ? it->second : rest;
    };

    LiveMemory live(snap, report.device);
    Point now;
    now.bytes.assign(rest + 1, 0);
    for (const auto& [addr, block] : live.blocks())
        now.bytes[series(block.stack)] += static_cast<int64_t>(block.size);
    now.total = live.liveBytes();

    auto emit = [&t](const Point& p) {
        t.x.push_back(p.x);
        auto& out = t.bytes.emplace_back(p.bytes.size());
        std::transform(p.bytes.begin(), p.bytes.end(), out.begin(),
                       [](int64_t b) { return static_cast<uint64_t>(std::max<int64_t>(b, 0)); });
    };
    emit(now);  // before the first entry

    const size_t spans = std::max<size_t>(1, (maxPoints - 1) / 2);
    const size_t perSpan = (entries.size() + spans - 1) / spans;
    Point low, high;
    double lastTime = 0;
    for (size_t i = 0; i < entries.size(); ++i) {
        const TraceEntry& e = entries[i];
        live.apply(e, [&](StackId stack, int64_t delta) { now.bytes[series(stack)] += delta; });
        now.total = live.liveBytes();
        if (e.timeUs > 0) lastTime = (e.timeUs - report.firstUs) / 1e6;
        now.index = i + 1;
        now.x = t.timed ? lastTime : static_cast<double>(i + 1);
        const bool first = i % perSpan == 0;
        if (first || now.total < low.total) low = now;
        if (first || now.total > high.total) high = now;
        if ((i + 1) % perSpan == 0 || i + 1 == entries.size()) {
            const bool lowFirst = low.index < high.index;
            emit(lowFirst ? low : high);
            if (low.index != high.index) emit(lowFirst ? high : low);
        }
    }
    return t;
}

}  // namespace mtia::mem
