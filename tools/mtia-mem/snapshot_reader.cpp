#include "snapshot_reader.hpp"

#include <fmt/format.h>

#include <simdjson.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sys/stat.h>

namespace mtia::mem {

namespace {

constexpr size_t kChunk = size_t{64} << 20;  // progress is reported per chunk read

std::string readFile(const std::string& path, const ReadOptions& options) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
        throw SnapshotError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
    if (!S_ISREG(st.st_mode))
        throw SnapshotError(fmt::format("{}: cannot open: not a regular file", path));
    std::ifstream in(path, std::ios::binary);
    if (!in) throw SnapshotError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
    const auto size = static_cast<size_t>(st.st_size);
    std::string bytes;
    // The JSON reader needs simdjson's padding after the text; reserving it here spares a copy.
    bytes.reserve(size + simdjson::SIMDJSON_PADDING);
    bytes.resize(size);
    for (size_t done = 0; done < size;) {
        const size_t n = std::min(kChunk, size - done);
        if (!in.read(bytes.data() + done, static_cast<std::streamsize>(n)))
            throw SnapshotError(fmt::format("{}: read failed after {} of {} bytes", path,
                                            done + in.gcount(), size));
        done += n;
        if (options.progress) options.progress("reading", double(done) / double(size));
    }
    return bytes;
}

}  // namespace

Snapshot parseSnapshot(const std::string& name, std::string bytes, const ReadOptions& options) {
    if (!bytes.empty() && static_cast<unsigned char>(bytes[0]) == 0x80)
        return readPickleSnapshot(name, std::move(bytes), options);
    return readJsonSnapshot(name, std::move(bytes), options);
}

Snapshot readSnapshot(const std::string& path, const ReadOptions& options) {
    return parseSnapshot(path, readFile(path, options), options);
}

}  // namespace mtia::mem
