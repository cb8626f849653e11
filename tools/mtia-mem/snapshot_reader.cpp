#include "snapshot_reader.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

namespace mtia::mem {

Snapshot readSnapshot(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw SnapshotError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  const int first = in.peek();
  if (first == 0x80) {
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return readPickleSnapshot(path, bytes);
  }
  in.close();
  return readJsonSnapshot(path);
}

}  // namespace mtia::mem
