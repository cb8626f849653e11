// mtia-mem summary SNAP [--top N] [--json]
#include "byte_size.hpp"
#include "commands.hpp"
#include "json_writer.hpp"
#include "load_snapshot.hpp"
#include "snapshot_summary.hpp"

#include <fmt/format.h>

#include <memory>

namespace mtia::mem {

namespace {

struct SummaryArgs {
    std::string path;
    size_t top = 10;
    bool json = false;
};

void printBytes(const char* what, uint64_t bytes) {
    fmt::print("  {:<20} {:>12}  ({} bytes)\n", what, formatBytes(bytes), bytes);
}

void printText(const SummaryArgs& a, const Snapshot& snap,
               const std::vector<DeviceSummary>& devices) {
    fmt::print("summary of {} ({})\n", a.path, shapeName(snap.shape));
    if (devices.empty())
        fmt::print("no segments: nothing was allocated when the snapshot was taken\n");
    for (const DeviceSummary& d : devices) {
        fmt::print("device {}: {} segment{}, {} expandable\n", d.device, d.segments,
                   d.segments == 1 ? "" : "s", d.expandableSegments);
        printBytes("reserved", d.reserved);
        printBytes("allocated", d.allocated);
        printBytes("active", d.active);
        printBytes("inactive (free)", d.inactive);
        printBytes("inactive split", d.inactiveSplit);
        printBytes("largest free block", d.largestFree);
        fmt::print("  {:<20} {:>12.3f}\n", "fragmentation", d.fragmentation());
        fmt::print("  private pools: {}\n", d.privatePools.size());
        for (const PoolUsage& p : d.privatePools)
            fmt::print("    pool ({}, {}): {} segment{}, {} reserved, {} allocated\n", p.id[0],
                       p.id[1], p.segments, p.segments == 1 ? "" : "s", formatBytes(p.reserved),
                       formatBytes(p.allocated));
        fmt::print("  top allocation sites of the live blocks:\n");
        printSites(snap.stacks, d.sites.sorted(), a.top, "    ");
    }
}

void printJson(const SummaryArgs& a, const Snapshot& snap,
               const std::vector<DeviceSummary>& devices) {
    JsonWriter j;
    j.beginObject()
        .member("file", a.path)
        .member("shape", shapeName(snap.shape))
        .key("devices")
        .beginArray();
    for (const DeviceSummary& d : devices) {
        j.beginObject()
            .member("device", d.device)
            .member("segments", d.segments)
            .member("expandable_segments", d.expandableSegments)
            .member("reserved_bytes", d.reserved)
            .member("allocated_bytes", d.allocated)
            .member("active_bytes", d.active)
            .member("inactive_bytes", d.inactive)
            .member("inactive_split_bytes", d.inactiveSplit)
            .member("largest_free_block_bytes", d.largestFree)
            .member("fragmentation", d.fragmentation())
            .key("private_pools")
            .beginArray();
        for (const PoolUsage& p : d.privatePools)
            j.beginObject()
                .key("pool_id")
                .beginArray()
                .value(p.id[0])
                .value(p.id[1])
                .endArray()
                .member("segments", p.segments)
                .member("reserved_bytes", p.reserved)
                .member("allocated_bytes", p.allocated)
                .endObject();
        j.endArray().member("live_blocks", d.sites.blocks()).key("top_sites");
        writeSites(j, snap.stacks, d.sites.sorted(), a.top);
        j.endObject();
    }
    j.endArray().endObject();
    fmt::print("{}", j.finish());
}

void run(const SummaryArgs& a) {
    const Snapshot snap = loadSnapshot(a.path);
    const std::vector<DeviceSummary> devices = summarize(snap);
    if (a.json)
        printJson(a, snap, devices);
    else
        printText(a, snap, devices);
}

}  // namespace

CommandSpec summaryCommand() {
    auto args = std::make_shared<SummaryArgs>();
    return {.name = "summary",
            .description = "Per device: segments, reserved, allocated, active and free cached "
                           "bytes, fragmentation "
                           "of the free bytes, private pools, and the allocation sites holding the "
                           "most live bytes",
            .options = {{.names = "SNAP",
                         .target = &args->path,
                         .help = "snapshot file (pickle or JSON; PyTorch 2.x or 1.13)",
                         .required = true},
                        topOption(args->top),
                        {.names = "--json",
                         .target = &args->json,
                         .help = "print one JSON object instead of text"}},
            .run = [args] { run(*args); }};
}

}  // namespace mtia::mem
