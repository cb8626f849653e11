// What several subcommands share on the command line and in their reports.
#include "commands.hpp"

#include "allocator/snapshot/writer.hpp"

#include <fmt/format.h>

#include <fstream>
#include <stdexcept>

namespace mtia::mem {

OptionSpec topOption(size_t& top) {
    return {.names = "--top",
            .target = &top,
            .help = "how many allocation sites to list",
            .showDefault = true,
            .atLeast = WholeAtLeast{1, "allocation sites"}};
}

std::optional<std::string> snapshotFormatOf(const std::string& path) {
    auto endsWith = [&path](std::string_view tail) {
        return path.size() >= tail.size() &&
               path.compare(path.size() - tail.size(), tail.size(), tail) == 0;
    };
    if (endsWith(".pickle") || endsWith(".pkl")) return "pickle";
    if (endsWith(".json")) return "json";
    return std::nullopt;
}

void writeSnapshotFile(const Snapshot& snap, const std::string& path, const std::string& format) {
    std::ofstream file(path, std::ios::binary);
    if (!file) throw std::runtime_error(fmt::format("{}: cannot write", path));
    if (format == "pickle") {
        const std::string bytes = toPickle(snap);
        file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    } else {
        writeJson(snap, file);
    }
    file.close();
    if (!file) throw std::runtime_error(fmt::format("{}: write failed", path));
}

const char* shapeName(Shape shape) {
    return shape == Shape::SegmentList ? "PyTorch 1.13 list of segments" : "PyTorch 2.x snapshot";
}

}  // namespace mtia::mem
