#include "snapshot_reader.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace mtia::mem {

Snapshot readSnapshot(const std::string& path, const ReadOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw SnapshotError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  if (in.peek() == 0x80) {
    in.seekg(0, std::ios::end);
    std::string bytes(static_cast<size_t>(in.tellg()), '\0');
    in.seekg(0);
    if (!in.read(bytes.data(), static_cast<std::streamsize>(bytes.size())))
      throw SnapshotError(fmt::format("{}: read failed: {}", path, std::strerror(errno)));
    return readPickleSnapshot(path, std::move(bytes), options);
  }
  in.close();
  return readJsonSnapshot(path, options);  // simdjson reads the file into its own padded buffer
}

}  // namespace mtia::mem
