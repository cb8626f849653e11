// The subcommands of mtia-mem. Each adds itself to the command line (its
// options and what runs when it is chosen); main() only lists them, so a new
// subcommand is one more file and one more line there.
// A subcommand that fails throws: main() prints "mtia-mem: <what>" and exits 1
// (a bad snapshot: "mtia-mem: <file>: <what is wrong>").
// Every report goes to stdout, as text or, with --json, as one JSON document;
// stderr has only errors (and a progress line on a terminal).
#pragma once

#include "allocator/snapshot/model.hpp"

#include <CLI/CLI.hpp>

#include <cstddef>
#include <optional>
#include <string>

namespace mtia::mem {

void addReplayCommand(CLI::App& app);
void addGenerateCommand(CLI::App& app);
void addSummaryCommand(CLI::App& app);
void addDiffCommand(CLI::App& app);
void addTraceCommand(CLI::App& app);
void addPlotCommand(CLI::App& app);
void addExportCommand(CLI::App& app);

// --top N: how many allocation sites a report lists (default 10).
void addTopOption(CLI::App& cmd, size_t& top);
// "pickle" for a name ending in .pickle or .pkl, "json" for .json, else nullopt.
std::optional<std::string> snapshotFormatOf(const std::string& path);
// Writes snap to path as format ("json" or "pickle"); throws naming the file when that fails.
void writeSnapshotFile(const Snapshot& snap, const std::string& path, const std::string& format);
// "PyTorch 2.x snapshot" or "PyTorch 1.13 list of segments", for reports.
const char* shapeName(Shape shape);

}  // namespace mtia::mem
