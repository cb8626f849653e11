// mtia-mem: memory snapshots and what-if replays for people debugging device
// memory. Subcommands:
//   replay TRACE [--conf CONF] [--json] [--device-memory SIZE]
//   generate --workload train|train-varlen|kv-cache [--steps N] [--seed S] -o FILE
#include "replay.hpp"
#include "snapshot_reader.hpp"
#include "trace_generator.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>

namespace {

using namespace mtia::mem;

void printFigures(const ReplayFigures& f, const char* indent) {
  fmt::print("{}peak reserved        {:>16} bytes\n", indent, f.peakReserved);
  fmt::print("{}peak allocated       {:>16} bytes\n", indent, f.peakAllocated);
  fmt::print("{}reserved/allocated   {:>16.3f}\n", indent, f.ratio());
  fmt::print("{}device allocations   {:>16}\n", indent, f.deviceAllocs);
  fmt::print("{}device frees         {:>16}\n", indent, f.deviceFrees);
  fmt::print("{}alloc retries        {:>16}\n", indent, f.retries);
  fmt::print("{}out of memory        {:>16}\n", indent, f.ooms);
  fmt::print("{}ops                  {:>16}\n", indent, f.ops);
  fmt::print("{}ns per op            {:>16.1f}\n", indent, f.nsPerOp());
  if (f.unknownFrees > 0)
    fmt::print("{}frees of blocks from before the trace (skipped): {}\n", indent, f.unknownFrees);
}

std::string figuresJson(const ReplayFigures& f) {
  return fmt::format(
      "\"peak_reserved_bytes\": {}, \"peak_allocated_bytes\": {}, \"reserved_over_allocated\": {:.6f}, "
      "\"num_device_alloc\": {}, \"num_device_free\": {}, \"num_alloc_retries\": {}, \"num_ooms\": {}, \"ops\": {}, "
      "\"ns_per_op\": {:.2f}, \"unknown_frees\": {}",
      f.peakReserved, f.peakAllocated, f.ratio(), f.deviceAllocs, f.deviceFrees, f.retries, f.ooms, f.ops,
      f.nsPerOp(), f.unknownFrees);
}

int runReplay(const std::string& path, const std::string& conf, bool json, const std::string& deviceMemory) {
  // Before the runtime starts: the simulated device reads its size once.
  if (!deviceMemory.empty()) setenv("MTIA_SIM_MEMORY", deviceMemory.c_str(), 1);
  const Snapshot snap = readSnapshot(path);
  const ReplayResult r = replay(snap, conf);
  if (json) {
    std::string devices;
    for (const ReplayFigures& f : r.devices)
      devices += fmt::format("{}{{\"device\": {}, {}}}", devices.empty() ? "" : ", ", f.device, figuresJson(f));
    fmt::print("{{{}, \"devices\": [{}]}}\n", figuresJson(r.total), devices);
    return 0;
  }
  fmt::print("replay of {} through the caching allocator ({})\n", path, conf.empty() ? "default settings" : conf);
  printFigures(r.total, "  ");
  if (r.devices.size() > 1)
    for (const ReplayFigures& f : r.devices) {
      fmt::print("  device {}:\n", f.device);
      printFigures(f, "    ");
    }
  return 0;
}

int runGenerate(const std::string& workload, int steps, uint64_t seed, const std::string& out) {
  GenerateOptions o;
  if (!workloadFromName(workload, o.workload))
    throw std::invalid_argument(fmt::format("--workload {}: expected train, train-varlen or kv-cache", workload));
  o.steps = steps;
  o.seed = seed;
  const Snapshot snap = generate(o);
  std::ofstream file(out);
  if (!file) throw std::runtime_error(fmt::format("-o {}: cannot write", out));
  writeJson(snap, file);
  file.close();
  if (!file) throw std::runtime_error(fmt::format("-o {}: write failed", out));
  fmt::print("{}: {} trace entries ({})\n", out, snap.deviceTraces[0].size(), workload);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"mtia-mem: memory snapshots and what-if replays of recorded allocator traces"};
  app.require_subcommand(1);

  auto* replayCmd = app.add_subcommand(
      "replay", "replay the allocations and frees of a PyTorch 2.x memory snapshot (JSON or pickle) through "
                "our caching allocator on the simulated device");
  std::string trace, conf, deviceMemory;
  bool json = false;
  replayCmd->add_option("TRACE", trace, "snapshot file (torch.cuda.memory._dump_snapshot pickle, or JSON)")->required();
  replayCmd->add_option("--conf", conf, "allocator settings, MTIA_ALLOC_CONF syntax (e.g. expandable_segments:True)");
  replayCmd->add_flag("--json", json, "one JSON object instead of text");
  replayCmd->add_option("--device-memory", deviceMemory,
                        "memory of each simulated device (MTIA_SIM_MEMORY syntax, e.g. 80GiB); default 16GiB");

  auto* genCmd = app.add_subcommand("generate", "write a synthetic trace of a realistic workload");
  std::string workload = "train", out;
  int steps = 0;
  uint64_t seed = 1;
  genCmd->add_option("--workload", workload, "train, train-varlen or kv-cache")->capture_default_str();
  genCmd->add_option("--steps", steps, "training steps or decode steps (0: the workload's default)");
  genCmd->add_option("--seed", seed, "seed of the random choices")->capture_default_str();
  genCmd->add_option("-o,--output", out, "JSON file to write")->required();

  CLI11_PARSE(app, argc, argv);
  try {
    if (*replayCmd) return runReplay(trace, conf, json, deviceMemory);
    return runGenerate(workload, steps, seed, out);
  } catch (const std::exception& e) {
    fmt::print(stderr, "mtia-mem: {}\n", e.what());
    return 1;
  }
}
