// mtia-mem export SNAP -o OUT [--format json|pickle] [--json]
#include "commands.hpp"
#include "json_writer.hpp"
#include "load_snapshot.hpp"

#include <fmt/format.h>

#include <memory>

namespace mtia::mem {

namespace {

struct ExportArgs {
    std::string path, output, format;
    bool json = false;
};

void run(const ExportArgs& a) {
    const std::string format =
        a.format.empty() ? snapshotFormatOf(a.output).value_or("") : a.format;
    if (format.empty())
        throw std::invalid_argument(fmt::format(
            "-o {}: say --format json or pickle (the name ends in neither .json, .pickle nor .pkl)",
            a.output));
    const Snapshot snap = loadSnapshot(a.path);
    writeSnapshotFile(snap, a.output, format);
    size_t entries = 0;
    for (const auto& trace : snap.deviceTraces) entries += trace.size();
    if (a.json) {
        fmt::print("{}", JsonWriter()
                             .beginObject()
                             .member("file", a.path)
                             .member("shape", shapeName(snap.shape))
                             .member("output", a.output)
                             .member("format", format)
                             .member("segments", snap.segments.size())
                             .member("trace_entries", entries)
                             .endObject()
                             .finish());
    } else {
        fmt::print(
            "{}: {} segments and {} trace entries of {} ({}) as a PyTorch 2.x snapshot in {}\n",
            a.output, snap.segments.size(), entries, a.path, shapeName(snap.shape), format);
    }
}

}  // namespace

CommandSpec exportCommand() {
    auto args = std::make_shared<ExportArgs>();
    return {.name = "export",
            .description = "Convert a snapshot between JSON and pickle (the pickle PyTorch's "
                           "memory viewer loads); a "
                           "PyTorch 1.13 list of segments comes out as the 2.x dict",
            .options = {{.names = "SNAP",
                         .target = &args->path,
                         .help = "snapshot file (pickle or JSON; PyTorch 2.x or 1.13)",
                         .required = true},
                        {.names = "-o,--output",
                         .target = &args->output,
                         .help = "file to write",
                         .required = true},
                        {.names = "--format",
                         .target = &args->format,
                         .help = "json or pickle (default: from the output's name)",
                         .oneOf = {"json", "pickle"}},
                        {.names = "--json",
                         .target = &args->json,
                         .help = "print one JSON object (what was written) instead of text"}},
            .run = [args] { run(*args); }};
}

}  // namespace mtia::mem
