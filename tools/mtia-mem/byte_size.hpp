// Byte counts on the command line and in reports: the syntax of
// MTIA_SIM_MEMORY (a number with an optional K, M, G or T, optionally
// followed by iB or B; powers of 1024), so one size reads the same everywhere.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mtia::mem {

std::optional<uint64_t> parseByteSize(std::string_view text);
// "8.23 GiB", "512 MiB", "4 KiB", "17 B".
std::string formatBytes(uint64_t bytes);

}  // namespace mtia::mem
