#include "byte_size.hpp"

#include <fmt/format.h>

#include <cctype>
#include <charconv>

namespace mtia::mem {

std::optional<uint64_t> parseByteSize(std::string_view text) {
    uint64_t number = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (ec != std::errc() || end == text.data()) return std::nullopt;
    std::string unit;
    for (const char* c = end; c != text.data() + text.size(); ++c)
        unit += static_cast<char>(std::toupper(static_cast<unsigned char>(*c)));
    unsigned shift = 0;
    if (!unit.empty() && unit != "B") {
        switch (unit.front()) {
        case 'K': shift = 10; break;
        case 'M': shift = 20; break;
        case 'G': shift = 30; break;
        case 'T': shift = 40; break;
        default: return std::nullopt;
        }
        const std::string_view rest = std::string_view(unit).substr(1);
        if (!rest.empty() && rest != "B" && rest != "IB") return std::nullopt;
    }
    if (number > (UINT64_MAX >> shift)) return std::nullopt;
    return number << shift;
}

std::string formatBytes(uint64_t bytes) {
    static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double value = static_cast<double>(bytes);
    size_t unit = 0;
    while (value >= 1024 && unit + 1 < std::size(kUnits)) {
        value /= 1024;
        ++unit;
    }
    if (unit == 0) return fmt::format("{} B", bytes);
    return fmt::format("{:.2f} {}", value, kUnits[unit]);
}

}  // namespace mtia::mem
