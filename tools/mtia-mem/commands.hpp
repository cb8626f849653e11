// The subcommands of mtia-mem. Each adds itself to the command line (its
// options and what runs when it is chosen); main() only lists them, so a new
// subcommand (summary, diff, plot) is one more file and one more line there.
// A subcommand that fails throws: main() prints "mtia-mem: <what>" and exits 1.
#pragma once

#include <CLI/CLI.hpp>

namespace mtia::mem {

void addReplayCommand(CLI::App& app);
void addGenerateCommand(CLI::App& app);

}  // namespace mtia::mem
