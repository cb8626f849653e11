#include "trace_analysis.hpp"

#include "live_memory.hpp"

#include <fmt/format.h>

#include <cmath>
#include <ctime>

namespace mtia::mem {

namespace {

DeviceTraceReport analyzeDevice(const Snapshot& snap, int device) {
    const auto& entries = snap.deviceTraces[static_cast<size_t>(device)];
    DeviceTraceReport r;
    r.device = device;
    r.entries = entries.size();
    for (const TraceEntry& e : entries) {
        if (e.timeUs <= 0) continue;
        if (!r.timed) r.firstUs = e.timeUs;
        r.timed = true;
        r.lastUs = e.timeUs;
    }

    // First pass: the peak and everything counted.
    LiveMemory live(snap, device);
    r.preludeBytes = live.preludeBytes();
    r.preludeBlocks = live.preludeBlocks();
    r.peakBytes = live.liveBytes();
    r.peakUs = entries.front().timeUs;
    for (size_t i = 0; i < entries.size(); ++i) {
        const TraceEntry& e = entries[i];
        live.apply(e);
        if (live.liveBytes() > r.peakBytes) {
            r.peakBytes = live.liveBytes();
            r.peakEntry = i;
            r.peakUs = e.timeUs;
        }
        if (e.action == Action::Oom)
            r.ooms.push_back(OomEntry{e.timeUs, e.size, e.addr, e.stream, e.stack});
    }
    r.endBytes = live.liveBytes();
    r.allocs = live.allocs();
    r.frees = live.frees();

    // Second pass, up to the peak: what was live then.
    LiveMemory atPeak(snap, device);
    if (r.peakEntry)
        for (size_t i = 0; i <= *r.peakEntry; ++i) atPeak.apply(entries[i]);
    for (const auto& [addr, block] : atPeak.blocks()) r.liveAtPeak.add(block.stack, block.size);
    return r;
}

}  // namespace

std::vector<DeviceTraceReport> analyzeTraces(const Snapshot& snap) {
    std::vector<DeviceTraceReport> out;
    for (size_t d = 0; d < snap.deviceTraces.size(); ++d)
        if (!snap.deviceTraces[d].empty()) out.push_back(analyzeDevice(snap, static_cast<int>(d)));
    return out;
}

std::string isoTime(double us) {
    constexpr double kYear10000 = 253402300800e6;  // gmtime's years have four digits until then
    if (!(us >= 0 && us < kYear10000)) return fmt::format("{} us", us);
    const double seconds = std::floor(us / 1e6);
    const auto micros = static_cast<int64_t>(std::llround(us - seconds * 1e6));
    const auto t = static_cast<std::time_t>(seconds);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char date[32];
    std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
    return fmt::format("{}.{:06}Z", date, std::min<int64_t>(micros, 999999));
}

}  // namespace mtia::mem
