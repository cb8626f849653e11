// mtia-mem generate --workload W [--steps N] [--seed S] [--device-memory-budget SIZE] -o FILE
//                   [--format json|pickle]
#include "byte_size.hpp"
#include "commands.hpp"
#include "trace_generator.hpp"

#include <fmt/format.h>

#include <memory>

namespace mtia::mem {

namespace {

struct GenerateArgs {
  std::string workload, output, format, budget = "16GiB";
  int steps = 0;
  uint64_t seed = 1;
};

void run(const GenerateArgs& a) {
  GenerateOptions o;
  if (!workloadFromName(a.workload, o.workload))
    throw std::invalid_argument(fmt::format("--workload {}: expected train, train-varlen or kv-cache", a.workload));
  const auto budget = parseByteSize(a.budget);
  if (!budget || *budget == 0)
    throw std::invalid_argument(fmt::format("--device-memory-budget {}: expected a size such as 16GiB", a.budget));
  const std::string format = a.format.empty() ? snapshotFormatOf(a.output).value_or("json") : a.format;
  o.steps = a.steps;
  o.seed = a.seed;
  o.budgetBytes = *budget;
  const GeneratedTrace g = generate(o);

  writeSnapshotFile(g.snapshot, a.output, format);
  fmt::print("{}: {} trace entries, {}; peak allocated {} of a {} budget\n", a.output,
             g.snapshot.deviceTraces[0].size(), g.model, formatBytes(g.peakBytes), formatBytes(o.budgetBytes));
}

}  // namespace

void addGenerateCommand(CLI::App& app) {
  auto args = std::make_shared<GenerateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "generate",
      "Write a synthetic trace of a realistic workload as a PyTorch 2.x memory snapshot: transformer training "
      "(train), the same with varying sequence lengths (train-varlen), inference with growing KV caches (kv-cache)");
  cmd->add_option("--workload", args->workload, "train, train-varlen or kv-cache")->required();
  cmd->add_option("--steps", args->steps, "training steps, or decode steps of kv-cache (default 6 and 400)")
      ->check(wholeAtLeast(0, "steps"));
  cmd->add_option("--seed", args->seed, "seed of the random choices (the same seed, the same trace)")
      ->capture_default_str();
  cmd->add_option("--device-memory-budget", args->budget,
                  "device memory the workload is sized for: the largest model and batch whose peak stays within "
                  "70% of it")
      ->capture_default_str();
  cmd->add_option("-o,--output", args->output, "file to write")->required();
  cmd->add_option("--format", args->format, "json or pickle (default: pickle for a .pickle or .pkl file, else json)")
      ->check(CLI::IsMember({"json", "pickle"}));
  cmd->callback([args] { run(*args); });
}

}  // namespace mtia::mem
