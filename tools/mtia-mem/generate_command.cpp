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
        throw std::invalid_argument(
            fmt::format("--workload {}: expected train, train-varlen or kv-cache", a.workload));
    const auto budget = parseByteSize(a.budget);
    if (!budget || *budget == 0)
        throw std::invalid_argument(
            fmt::format("--device-memory-budget {}: expected a size such as 16GiB", a.budget));
    const std::string format =
        a.format.empty() ? snapshotFormatOf(a.output).value_or("json") : a.format;
    o.steps = a.steps;
    o.seed = a.seed;
    o.budgetBytes = *budget;
    const GeneratedTrace g = generate(o);

    writeSnapshotFile(g.snapshot, a.output, format);
    fmt::print("{}: {} trace entries, {}; peak allocated {} of a {} budget\n", a.output,
               g.snapshot.deviceTraces[0].size(), g.model, formatBytes(g.peakBytes),
               formatBytes(o.budgetBytes));
}

}  // namespace

CommandSpec generateCommand() {
    auto args = std::make_shared<GenerateArgs>();
    return {
        .name = "generate",
        .description =
            "Write a synthetic trace of a realistic workload as a PyTorch 2.x memory snapshot: "
            "transformer training (train), the same with varying sequence lengths (train-varlen), "
            "inference with growing KV caches (kv-cache)",
        .options =
            {{.names = "--workload",
              .target = &args->workload,
              .help = "train, train-varlen or kv-cache",
              .required = true},
             {.names = "--steps",
              .target = &args->steps,
              .help = "training steps, or decode steps of kv-cache (default 6 and 400)",
              .atLeast = WholeAtLeast{0, "steps"}},
             {.names = "--seed",
              .target = &args->seed,
              .help = "seed of the random choices (the same seed, the same trace)",
              .showDefault = true},
             {.names = "--device-memory-budget",
              .target = &args->budget,
              .help =
                  "device memory the workload is sized for: the largest model and batch whose peak "
                  "stays within 70% of it",
              .showDefault = true},
             {.names = "-o,--output",
              .target = &args->output,
              .help = "file to write",
              .required = true},
             {.names = "--format",
              .target = &args->format,
              .help = "json or pickle (default: pickle for a .pickle or .pkl file, else json)",
              .oneOf = {"json", "pickle"}}},
        .run = [args] { run(*args); }};
}

}  // namespace mtia::mem
