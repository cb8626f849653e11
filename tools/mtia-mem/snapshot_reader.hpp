// Reads a memory snapshot file into the model of allocator/snapshot/model.hpp:
// JSON (parsed with simdjson, which suits files of hundreds of MB) or a pickle
// as torch.cuda.memory._dump_snapshot writes it, told apart by the first byte
// (a pickle of protocol 2 or later starts with PROTO, 0x80).
//
// Files are untrusted: whatever they hold, a read ends in a Snapshot or a
// SnapshotError naming the file and what is wrong where, with memory and time
// bounded by a small multiple of the file's size.
#pragma once

#include "allocator/snapshot/model.hpp"

#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace mtia::mem {

class SnapshotError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct ReadOptions {
    // What to read beyond the traces' actions, addresses, sizes, streams and times; a replay needs
    // neither, and skipping them keeps a large file's read short.
    bool segments = true;
    bool frames = true;
    // Called now and then during a long read with what is being done and how far along (0 to 1);
    // empty: no reports.
    std::function<void(std::string_view stage, double fraction)> progress;
};

// Throws SnapshotError naming the file and what is wrong where.
Snapshot readSnapshot(const std::string& path, const ReadOptions& options = {});
// The same for bytes already in memory; name is what messages call them.
Snapshot parseSnapshot(const std::string& name, std::string bytes, const ReadOptions& options = {});
Snapshot readJsonSnapshot(const std::string& name, std::string bytes,
                          const ReadOptions& options = {});
Snapshot readPickleSnapshot(const std::string& name, std::string bytes,
                            const ReadOptions& options = {});

}  // namespace mtia::mem
