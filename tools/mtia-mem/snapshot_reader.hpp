// Reads a memory snapshot file into the model of snapshot.hpp: JSON (parsed
// with simdjson, which suits files of hundreds of MB) or a pickle as
// torch.cuda.memory._dump_snapshot writes it, told apart by the first byte.
#pragma once

#include "snapshot.hpp"

#include <stdexcept>
#include <string>

namespace mtia::mem {

class SnapshotError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws SnapshotError naming the file and what is wrong where.
Snapshot readSnapshot(const std::string& path);
Snapshot readJsonSnapshot(const std::string& path);
Snapshot readPickleSnapshot(const std::string& path, const std::string& bytes);

}  // namespace mtia::mem
