// mtia-mem diff A B [--top N] [--json]
#include "byte_size.hpp"
#include "commands.hpp"
#include "json_writer.hpp"
#include "load_snapshot.hpp"
#include "snapshot_diff.hpp"

#include <fmt/format.h>

#include <memory>

namespace mtia::mem {

namespace {

struct DiffArgs {
    std::string before, after;
    size_t top = 10;
    bool json = false;
};

std::string signedBytes(uint64_t after, uint64_t before) {
    return after >= before ? "+" + formatBytes(after - before) : "-" + formatBytes(before - after);
}

void printText(const DiffArgs& a, const Snapshot& after, const SnapshotDiff& d) {
    fmt::print("diff of {} -> {}\n", a.before, a.after);
    fmt::print("  live blocks    {:>8} -> {:<8} {:>12} -> {:<12} ({})\n", d.beforeBlocks,
               d.afterBlocks, formatBytes(d.beforeBytes), formatBytes(d.afterBytes),
               signedBytes(d.afterBytes, d.beforeBytes));
    fmt::print("  new in {}: {} blocks, {} ({} bytes)\n", a.after, d.added.blocks(),
               formatBytes(d.added.bytes()), d.added.bytes());
    fmt::print("  freed since {}: {} blocks, {} ({} bytes)\n", a.before, d.freedBlocks,
               formatBytes(d.freedBytes), d.freedBytes);
    for (const auto& [device, c] : d.devices)
        fmt::print("  device {}: {} new blocks ({}), {} freed ({})\n", device, c.newBlocks,
                   formatBytes(c.newBytes), c.freedBlocks, formatBytes(c.freedBytes));
    fmt::print("  new live blocks by allocation site:\n");
    printSites(after.stacks, d.added.sorted(), a.top, "    ");
}

void printJson(const DiffArgs& a, const Snapshot& after, const SnapshotDiff& d) {
    JsonWriter j;
    j.beginObject()
        .member("before", a.before)
        .member("after", a.after)
        .member("before_live_blocks", d.beforeBlocks)
        .member("before_live_bytes", d.beforeBytes)
        .member("after_live_blocks", d.afterBlocks)
        .member("after_live_bytes", d.afterBytes)
        .member("new_blocks", d.added.blocks())
        .member("new_bytes", d.added.bytes())
        .member("freed_blocks", d.freedBlocks)
        .member("freed_bytes", d.freedBytes)
        .key("devices")
        .beginArray();
    for (const auto& [device, c] : d.devices)
        j.beginObject()
            .member("device", device)
            .member("new_blocks", c.newBlocks)
            .member("new_bytes", c.newBytes)
            .member("freed_blocks", c.freedBlocks)
            .member("freed_bytes", c.freedBytes)
            .endObject();
    j.endArray().key("new_sites");
    writeSites(j, after.stacks, d.added.sorted(), a.top);
    j.endObject();
    fmt::print("{}", j.finish());
}

void run(const DiffArgs& a) {
    const Snapshot before = loadSnapshot(a.before);
    const Snapshot after = loadSnapshot(a.after);
    const SnapshotDiff d = diffSnapshots(before, after);
    if (a.json)
        printJson(a, after, d);
    else
        printText(a, after, d);
}

}  // namespace

CommandSpec diffCommand() {
    auto args = std::make_shared<DiffArgs>();
    return {.name = "diff",
            .description = "Blocks live in snapshot B but not in A (same device, address, size and "
                           "stack are the same block), "
                           "by allocation site, largest first: what grew between two snapshots. "
                           "Also the total freed since A",
            .options = {{.names = "A",
                         .target = &args->before,
                         .help = "the earlier snapshot",
                         .required = true},
                        {.names = "B",
                         .target = &args->after,
                         .help = "the later snapshot",
                         .required = true},
                        topOption(args->top),
                        {.names = "--json",
                         .target = &args->json,
                         .help = "print one JSON object instead of text"}},
            .run = [args] { run(*args); }};
}

}  // namespace mtia::mem
