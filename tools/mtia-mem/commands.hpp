// The subcommands of mtia-mem. Each describes itself (its options and what
// runs when it is chosen, command_spec.hpp); main() lists them and builds the
// command line, so a new subcommand is one more file and one more line there.
// A subcommand that fails throws: main() prints "mtia-mem: <what>" and exits 1
// (a bad snapshot: "mtia-mem: <file>: <what is wrong>").
// Every report goes to stdout, as text or, with --json, as one JSON document;
// stderr has only errors (and a progress line on a terminal).
#pragma once

#include "allocator/snapshot/model.hpp"

#include "command_spec.hpp"

#include <cstddef>
#include <optional>
#include <string>

namespace mtia::mem {

CommandSpec replayCommand();
CommandSpec generateCommand();
CommandSpec summaryCommand();
CommandSpec diffCommand();
CommandSpec traceCommand();
CommandSpec plotCommand();
CommandSpec exportCommand();

// --top N: how many allocation sites a report lists (default: what top holds, 10).
OptionSpec topOption(size_t& top);
// "pickle" for a name ending in .pickle or .pkl, "json" for .json, else nullopt.
std::optional<std::string> snapshotFormatOf(const std::string& path);
// Writes snap to path as format ("json" or "pickle"); throws naming the file when that fails.
void writeSnapshotFile(const Snapshot& snap, const std::string& path, const std::string& format);
// "PyTorch 2.x snapshot" or "PyTorch 1.13 list of segments", for reports.
const char* shapeName(Shape shape);

}  // namespace mtia::mem
