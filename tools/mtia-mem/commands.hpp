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
// Accepts a whole number of at least least; the refusal names what was given and what is accepted
// ("--top: got 0; give a whole number of allocation sites, 1 or more"). CLI11's own number checks
// print their range as 0.000000 to 1.79e308. Thread-safe.
CLI::Validator wholeAtLeast(long long least, const std::string& what);
// "pickle" for a name ending in .pickle or .pkl, "json" for .json, else nullopt.
std::optional<std::string> snapshotFormatOf(const std::string& path);
// Writes snap to path as format ("json" or "pickle"); throws naming the file when that fails.
void writeSnapshotFile(const Snapshot& snap, const std::string& path, const std::string& format);
// "PyTorch 2.x snapshot" or "PyTorch 1.13 list of segments", for reports.
const char* shapeName(Shape shape);

}  // namespace mtia::mem
