// Byte counts for people: "20.00 MiB".
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string>

namespace mtia::allocator {

inline std::string formatBytes(uint64_t bytes) {
    static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (bytes < 1024) return fmt::format("{} B", bytes);
    double v = static_cast<double>(bytes);
    int unit = 0;
    while (v >= 1024.0 && unit < 6) {
        v /= 1024.0;
        ++unit;
    }
    return fmt::format("{:.2f} {}", v, kUnits[unit]);
}

}  // namespace mtia::allocator
