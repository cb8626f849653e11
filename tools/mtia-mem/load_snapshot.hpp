// Reading a snapshot for a subcommand: readSnapshot, with a progress line on
// stderr while a long read goes on, only when stderr is a terminal (so
// scripts and --json consumers see nothing of it).
#pragma once

#include "snapshot_reader.hpp"

#include <string>

namespace mtia::mem {

Snapshot loadSnapshot(const std::string& path, ReadOptions options = {});

}  // namespace mtia::mem
