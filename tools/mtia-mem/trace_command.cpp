// mtia-mem trace SNAP [--top N] [--json]
#include "byte_size.hpp"
#include "commands.hpp"
#include "json_writer.hpp"
#include "load_snapshot.hpp"
#include "stack_labels.hpp"
#include "trace_analysis.hpp"

#include <fmt/format.h>

#include <memory>

namespace mtia::mem {

namespace {

struct TraceArgs {
    std::string path;
    size_t top = 10;
    bool json = false;
};

// Why there is nothing to analyse, or empty when there is something.
std::string missingTrace(const Snapshot& snap, const std::vector<DeviceTraceReport>& devices) {
    if (snap.shape == Shape::SegmentList)
        return "no trace: a PyTorch 1.13 snapshot holds segments only";
    if (!snap.hasTraces)
        return "no trace: the snapshot was taken without recording history "
               "(torch.cuda.memory._record_memory_history)";
    if (devices.empty()) return "no trace: device_traces has no entries";
    return {};
}

std::string seconds(const DeviceTraceReport& r, double us) {
    return r.timed && us > 0 ? fmt::format("+{:.6f} s", (us - r.firstUs) / 1e6)
                             : std::string("time unknown");
}

std::string rateText(const DeviceTraceReport& r, uint64_t count) {
    const auto rate = r.rate(count);
    return rate ? fmt::format("{} ({:.1f}/s)", count, *rate) : fmt::format("{}", count);
}

void printText(const TraceArgs& a, const Snapshot& snap,
               const std::vector<DeviceTraceReport>& devices) {
    fmt::print("trace of {} ({})\n", a.path, shapeName(snap.shape));
    if (const std::string why = missingTrace(snap, devices); !why.empty()) {
        fmt::print("{}\n", why);
        return;
    }
    for (const DeviceTraceReport& r : devices) {
        fmt::print("device {}: {} entries", r.device, r.entries);
        if (r.timed)
            fmt::print(" over {:.6f} s, from {} to {}", r.spanSeconds(), isoTime(r.firstUs),
                       isoTime(r.lastUs));
        fmt::print("\n");
        fmt::print("  peak live            {:>12}  ({} bytes)", formatBytes(r.peakBytes),
                   r.peakBytes);
        if (!r.peakEntry)
            fmt::print(" before the first entry\n");
        else if (r.timed && r.peakUs > 0)
            fmt::print(" at {} ({}), entry {}\n", isoTime(r.peakUs), seconds(r, r.peakUs),
                       *r.peakEntry);
        else
            fmt::print(" after entry {}\n", *r.peakEntry);
        fmt::print("  live at the end      {:>12}  ({} bytes)\n", formatBytes(r.endBytes),
                   r.endBytes);
        fmt::print("  live before trace    {:>12}  ({} blocks allocated before the first entry)\n",
                   formatBytes(r.preludeBytes), r.preludeBlocks);
        fmt::print("  allocations          {}\n", rateText(r, r.allocs));
        fmt::print("  frees                {}\n", rateText(r, r.frees));
        fmt::print("  out of memory        {}\n", r.ooms.size());
        for (const OomEntry& o : r.ooms)
            fmt::print("    {}: {} requested, {} free on the device, stream {}, from {}\n",
                       seconds(r, o.timeUs), formatBytes(o.size), formatBytes(o.deviceFree),
                       o.stream, siteLabel(snap.stacks, o.stack));
        fmt::print("  live at the peak by allocation site:\n");
        printSites(snap.stacks, r.liveAtPeak.sorted(), a.top, "    ");
    }
}

void timeMember(JsonWriter& j, const char* key, const DeviceTraceReport& r, double us) {
    j.key(key);
    if (r.timed && us > 0)
        j.value(us);
    else
        j.null();
}

void printJson(const TraceArgs& a, const Snapshot& snap,
               const std::vector<DeviceTraceReport>& devices) {
    JsonWriter j;
    j.beginObject().member("file", a.path).member("shape", shapeName(snap.shape));
    const std::string why = missingTrace(snap, devices);
    j.member("has_trace", why.empty());
    if (!why.empty()) j.member("note", why);
    j.key("devices").beginArray();
    for (const DeviceTraceReport& r : devices) {
        j.beginObject().member("device", r.device).member("entries", r.entries);
        timeMember(j, "first_time_us", r, r.firstUs);
        timeMember(j, "last_time_us", r, r.lastUs);
        j.key("span_s");
        if (r.timed)
            j.value(r.spanSeconds());
        else
            j.null();
        j.member("peak_bytes", r.peakBytes).key("peak_entry");
        if (r.peakEntry)
            j.value(*r.peakEntry);
        else
            j.null();
        timeMember(j, "peak_time_us", r, r.peakUs);
        j.key("peak_time");
        if (r.timed && r.peakUs > 0)
            j.value(isoTime(r.peakUs)).member("peak_offset_s", (r.peakUs - r.firstUs) / 1e6);
        else
            j.null().key("peak_offset_s").null();
        j.member("end_bytes", r.endBytes)
            .member("prelude_bytes", r.preludeBytes)
            .member("prelude_blocks", r.preludeBlocks)
            .member("allocs", r.allocs)
            .member("frees", r.frees);
        for (const auto& [key, count] :
             {std::pair{"allocs_per_s", r.allocs}, std::pair{"frees_per_s", r.frees}}) {
            j.key(key);
            if (auto rate = r.rate(count))
                j.value(*rate);
            else
                j.null();
        }
        j.key("ooms").beginArray();
        for (const OomEntry& o : r.ooms) {
            j.beginObject();
            timeMember(j, "time_us", r, o.timeUs);
            j.member("size", o.size)
                .member("device_free", o.deviceFree)
                .member("stream", o.stream)
                .member("site", siteLabel(snap.stacks, o.stack))
                .endObject();
        }
        j.endArray().member("live_blocks_at_peak", r.liveAtPeak.blocks()).key("live_at_peak");
        writeSites(j, snap.stacks, r.liveAtPeak.sorted(), a.top);
        j.endObject();
    }
    j.endArray().endObject();
    fmt::print("{}", j.finish());
}

void run(const TraceArgs& a) {
    const Snapshot snap = loadSnapshot(a.path);
    const std::vector<DeviceTraceReport> devices = analyzeTraces(snap);
    if (a.json)
        printJson(a, snap, devices);
    else
        printText(a, snap, devices);
}

}  // namespace

CommandSpec traceCommand() {
    auto args = std::make_shared<TraceArgs>();
    return {
        .name = "trace",
        .description =
            "From the recorded history (device_traces), per device: the peak of live bytes, when "
            "it "
            "was and what was live then by allocation site, allocation and free counts and rates, "
            "out-of-memory events",
        .options = {{.names = "SNAP",
                     .target = &args->path,
                     .help = "snapshot file (pickle or JSON)",
                     .required = true},
                    topOption(args->top),
                    {.names = "--json",
                     .target = &args->json,
                     .help = "print one JSON object instead of text"}},
        .run = [args] { run(*args); }};
}

}  // namespace mtia::mem
