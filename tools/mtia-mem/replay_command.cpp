// mtia-mem replay TRACE [--conf CONF] [--json] [--device-memory SIZE]
#include "byte_size.hpp"
#include "commands.hpp"
#include "replay.hpp"
#include "snapshot_reader.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <memory>

namespace mtia::mem {

namespace {

struct ReplayArgs {
    std::string trace, conf, deviceMemory;
    bool json = false;
};

void printFigures(const ReplayFigures& f, const char* indent) {
    fmt::print("{}peak reserved        {:>16} bytes ({})\n", indent, f.peakReserved,
               formatBytes(f.peakReserved));
    fmt::print("{}peak allocated       {:>16} bytes ({})\n", indent, f.peakAllocated,
               formatBytes(f.peakAllocated));
    fmt::print("{}reserved/allocated   {:>16.3f}\n", indent, f.ratio());
    fmt::print("{}device allocations   {:>16}\n", indent, f.deviceAllocs);
    fmt::print("{}device frees         {:>16}\n", indent, f.deviceFrees);
    fmt::print("{}alloc retries        {:>16}\n", indent, f.retries);
    fmt::print("{}out of memory        {:>16}\n", indent, f.ooms);
    fmt::print("{}ops                  {:>16}\n", indent, f.ops);
    fmt::print("{}ns per op            {:>16.1f}\n", indent, f.nsPerOp());
    if (f.skippedAllocs > 0)
        fmt::print("{}allocations skipped: {} ran out of memory (try --device-memory)\n", indent,
                   f.skippedAllocs);
    if (f.preexisting > 0)
        fmt::print("{}blocks from before the trace, allocated first: {}\n", indent, f.preexisting);
}

std::string figuresJson(const ReplayFigures& f) {
    return fmt::format("\"peak_reserved_bytes\": {}, \"peak_allocated_bytes\": {}, "
                       "\"reserved_over_allocated\": {:.6f}, "
                       "\"num_device_alloc\": {}, \"num_device_free\": {}, \"num_alloc_retries\": "
                       "{}, \"num_ooms\": {}, \"ops\": {}, "
                       "\"ns_per_op\": {:.2f}, \"skipped_allocs\": {}, \"preexisting_blocks\": {}, "
                       "\"streams\": {}",
                       f.peakReserved, f.peakAllocated, f.ratio(), f.deviceAllocs, f.deviceFrees,
                       f.retries, f.ooms, f.ops, f.nsPerOp(), f.skippedAllocs, f.preexisting,
                       f.streams);
}

void run(const ReplayArgs& a) {
    if (!a.deviceMemory.empty()) {
        const auto bytes = parseByteSize(a.deviceMemory);
        if (!bytes)
            throw std::invalid_argument(fmt::format(
                "--device-memory {}: expected a size such as 80GiB, 512MiB or 17179869184",
                a.deviceMemory));
        // Before the runtime starts: the simulated device reads its size once, at the first mtia
        // call.
        setenv("MTIA_SIM_MEMORY", a.deviceMemory.c_str(), 1);
    }
    ReadOptions only;
    only.segments = false;
    only.frames = false;
    const Snapshot snap = readSnapshot(a.trace, only);
    const ReplayResult r = replay(snap, a.conf);
    if (a.json) {
        std::string devices;
        for (const ReplayFigures& f : r.devices)
            devices += fmt::format("{}{{\"device\": {}, {}}}", devices.empty() ? "" : ", ",
                                   f.device, figuresJson(f));
        fmt::print("{{{}, \"devices\": [{}]}}\n", figuresJson(r.total), devices);
        return;
    }
    fmt::print("replay of {} through the caching allocator ({})\n", a.trace,
               a.conf.empty() ? "default settings" : a.conf);
    printFigures(r.total, "  ");
    if (r.devices.size() > 1)
        for (const ReplayFigures& f : r.devices) {
            fmt::print("  device {}:\n", f.device);
            printFigures(f, "    ");
        }
}

}  // namespace

CommandSpec replayCommand() {
    auto args = std::make_shared<ReplayArgs>();
    return {
        .name = "replay",
        .description = "Replay the allocations and frees of a PyTorch 2.x memory snapshot "
                       "(torch.cuda.memory._dump_snapshot pickle, or JSON) through our caching "
                       "allocator on the simulated "
                       "device, and report peak reserved and allocated bytes, their ratio, device "
                       "allocations and frees, "
                       "retries, out-of-memory failures and ns per operation",
        .options =
            {{.names = "TRACE", .target = &args->trace, .help = "snapshot file", .required = true},
             {.names = "--conf",
              .target = &args->conf,
              .help =
                  "allocator settings in MTIA_ALLOC_CONF syntax, e.g. expandable_segments:True"},
             {.names = "--json",
              .target = &args->json,
              .help = "print one JSON object instead of text"},
             {.names = "--device-memory",
              .target = &args->deviceMemory,
              .help =
                  "memory of each simulated device (sets MTIA_SIM_MEMORY), e.g. 80GiB for a trace "
                  "recorded on an 80 GB device; default: MTIA_SIM_MEMORY, else 16GiB"}},
        .run = [args] { run(*args); }};
}

}  // namespace mtia::mem
