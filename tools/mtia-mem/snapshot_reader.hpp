// Reads a memory snapshot file into the model of snapshot.hpp: JSON (parsed
// with simdjson, which suits files of hundreds of MB) or a pickle as
// torch.cuda.memory._dump_snapshot writes it, told apart by the first byte
// (a pickle of protocol 2 or later starts with PROTO, 0x80).
#pragma once

#include "allocator/snapshot/model.hpp"

#include <stdexcept>
#include <string>

namespace mtia::mem {

class SnapshotError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What to read beyond the traces' actions, addresses, sizes, streams and times; a replay needs
// neither, and skipping them keeps a large file's read short.
struct ReadOptions {
  bool segments = true;
  bool frames = true;
};

// Throws SnapshotError naming the file and what is wrong where.
Snapshot readSnapshot(const std::string& path, const ReadOptions& options = {});
Snapshot readJsonSnapshot(const std::string& path, const ReadOptions& options = {});
Snapshot readPickleSnapshot(const std::string& path, std::string bytes, const ReadOptions& options = {});

}  // namespace mtia::mem
