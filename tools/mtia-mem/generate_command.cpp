// mtia-mem generate --workload W [--steps N] [--seed S] [--device-memory-budget SIZE] -o FILE
//                   [--format json|pickle]
#include "byte_size.hpp"
#include "commands.hpp"
#include "allocator/snapshot/writer.hpp"
#include "trace_generator.hpp"

#include <fmt/format.h>

#include <fstream>
#include <memory>

namespace mtia::mem {

namespace {

struct GenerateArgs {
  std::string workload, output, format, budget = "16GiB";
  int steps = 0;
  uint64_t seed = 1;
};

bool endsWith(const std::string& s, std::string_view tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

void run(const GenerateArgs& a) {
  GenerateOptions o;
  if (!workloadFromName(a.workload, o.workload))
    throw std::invalid_argument(fmt::format("--workload {}: expected train, train-varlen or kv-cache", a.workload));
  const auto budget = parseByteSize(a.budget);
  if (!budget || *budget == 0)
    throw std::invalid_argument(fmt::format("--device-memory-budget {}: expected a size such as 16GiB", a.budget));
  std::string format = a.format;
  if (format.empty()) format = endsWith(a.output, ".pickle") || endsWith(a.output, ".pkl") ? "pickle" : "json";
  o.steps = a.steps;
  o.seed = a.seed;
  o.budgetBytes = *budget;
  const GeneratedTrace g = generate(o);

  std::ofstream file(a.output, std::ios::binary);
  if (!file) throw std::runtime_error(fmt::format("-o {}: cannot write", a.output));
  if (format == "pickle") {
    const std::string bytes = toPickle(g.snapshot);
    file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  } else {
    writeJson(g.snapshot, file);
  }
  file.close();
  if (!file) throw std::runtime_error(fmt::format("-o {}: write failed", a.output));
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
      ->check(CLI::NonNegativeNumber);
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
