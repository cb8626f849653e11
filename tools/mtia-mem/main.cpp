// mtia-mem: memory snapshots and what-if replays, for people debugging
// device memory. Usage and the subcommands: README.md beside this file.
#include "commands.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <exception>

int main(int argc, char** argv) {
  CLI::App app{"mtia-mem: memory snapshots (summary, diff, trace, plot, export) and what-if replays of recorded allocator traces"};
  app.require_subcommand(1);
  mtia::mem::addReplayCommand(app);
  mtia::mem::addGenerateCommand(app);
  mtia::mem::addSummaryCommand(app);
  mtia::mem::addDiffCommand(app);
  mtia::mem::addTraceCommand(app);
  mtia::mem::addPlotCommand(app);
  mtia::mem::addExportCommand(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    fmt::print(stderr, "mtia-mem: {}\n", e.what());
    return 1;
  }
  return 0;
}
