#include "allocator/alloc_config.hpp"

#include "core/error.hpp"

#include <fmt/format.h>

#include <bit>
#include <cctype>
#include <charconv>
#include <cmath>
#include <vector>

namespace mtia::allocator {
namespace {

constexpr size_t kMinSizeMb = 20;             // PyTorch's floor for the two *_mb keys
constexpr uint32_t kMaxDivisions = 1u << 16;  // more steps than a 1 MiB interval has 512-byte units
constexpr std::string_view kBoolWords = "True or False";

// The value of key, for messages.
[[noreturn]] void bad(std::string_view key, std::string_view value, std::string_view accepted) {
    fail(mtiaErrorInvalidValue, "allocator setting '{}' has the value '{}'; expected {}", key,
         value, accepted);
}

bool parseUnsigned(std::string_view text, uint64_t& out) {
    if (text.empty()) return false;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc() && end == text.data() + text.size();
}

bool parseDouble(std::string_view text, double& out) {
    if (text.empty()) return false;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc() && end == text.data() + text.size() && std::isfinite(out);
}

size_t parseSizeMb(std::string_view key, std::string_view value) {
    uint64_t mb = 0;
    if (!parseUnsigned(value, mb) || mb < kMinSizeMb || mb > SIZE_MAX / AllocConfig::kMiB)
        bad(key, value, fmt::format("a whole number of MiB, at least {}", kMinSizeMb));
    return static_cast<size_t>(mb) * AllocConfig::kMiB;
}

bool parseBool(std::string_view key, std::string_view value) {
    if (value == "True") return true;
    if (value == "False") return false;
    bad(key, value, kBoolWords);
}

double parseFraction(std::string_view key, std::string_view value, bool zeroAllowed,
                     bool oneAllowed) {
    double v = 0;
    const bool ok = parseDouble(value, v) && (zeroAllowed ? v >= 0.0 : v > 0.0) &&
                    (oneAllowed ? v <= 1.0 : v < 1.0);
    if (!ok)
        bad(key, value,
            fmt::format("a number {} 0 and {} 1", zeroAllowed ? "from" : "above",
                        oneAllowed ? "up to" : "below"));
    return v;
}

uint32_t parseDivisions(std::string_view key, std::string_view value) {
    uint64_t d = 0;
    if (!parseUnsigned(value, d) || d > kMaxDivisions || (d != 0 && !std::has_single_bit(d)))
        bad(key, value,
            fmt::format("0 or a power of two up to {} (divisions), or a list "
                        "[MiB:divisions,...,>:divisions]",
                        kMaxDivisions));
    return static_cast<uint32_t>(d);
}

// Splits text at commas outside brackets.
std::vector<std::string_view> splitItems(std::string_view text) {
    std::vector<std::string_view> items;
    int depth = 0;
    size_t start = 0;
    for (size_t i = 0; i <= text.size(); ++i) {
        if (i == text.size() || (text[i] == ',' && depth == 0)) {
            items.push_back(text.substr(start, i - start));
            start = i + 1;
        } else if (text[i] == '[') {
            ++depth;
        } else if (text[i] == ']') {
            --depth;
        }
    }
    return items;
}

// roundup_power2_divisions as a list: "[256:1,512:2,>:8]". Each entry sets the interval that starts
// at that many MiB (a power of two); the first entry also covers the intervals below it, ">" every
// interval after the last one named. Interval starts must increase, and ">" comes last.
std::array<uint32_t, AllocConfig::kRoundupIntervals> parseDivisionList(std::string_view key,
                                                                       std::string_view list) {
    std::array<uint32_t, AllocConfig::kRoundupIntervals> out{};
    const std::string_view inner = list.substr(1, list.size() - 2);
    if (inner.empty()) bad(key, list, "a non-empty list [MiB:divisions,...,>:divisions]");
    bool first = true, sawRest = false;
    size_t last = 0;
    for (std::string_view entry : splitItems(inner)) {
        const size_t colon = entry.find(':');
        if (colon == std::string_view::npos || sawRest)
            bad(key, list,
                "entries MiB:divisions with increasing powers of two, then at most one >:divisions "
                "last");
        const std::string_view where = entry.substr(0, colon);
        const uint32_t divisions = parseDivisions(key, entry.substr(colon + 1));
        if (where == ">") {
            for (size_t i = first ? 0 : last + 1; i < out.size(); ++i) out[i] = divisions;
            sawRest = true;
            continue;
        }
        uint64_t mb = 0;
        if (!parseUnsigned(where, mb) || mb == 0 || !std::has_single_bit(mb))
            bad(key, list,
                fmt::format("interval starts that are powers of two in MiB; '{}' is not", where));
        const size_t index = std::min<size_t>(std::bit_width(mb) - 1, out.size() - 1);
        if (!first && index <= last)
            bad(key, list,
                fmt::format(
                    "interval starts in increasing order; '{}' does not follow the one before",
                    where));
        if (first) {
            for (size_t i = 0; i < index; ++i) out[i] = divisions;
        }
        out[index] = divisions;
        last = index;
        first = false;
    }
    return out;
}

std::string boolWord(bool v) {
    return v ? "True" : "False";
}

}  // namespace

AllocConfig AllocConfig::parse(std::string_view conf, const AllocConfig& base) {
    std::string text;
    text.reserve(conf.size());
    for (char c : conf)
        if (!std::isspace(static_cast<unsigned char>(c))) text.push_back(c);
    AllocConfig c = base;
    if (text.empty()) return c;
    for (std::string_view item : splitItems(text)) {
        const size_t colon = item.find(':');
        if (item.empty() || colon == std::string_view::npos || colon == 0)
            fail(mtiaErrorInvalidValue,
                 "allocator settings '{}': '{}' is not of the form key:value", text, item);
        const std::string_view key = item.substr(0, colon);
        const std::string_view value = item.substr(colon + 1);
        if (key == "max_split_size_mb") {
            c.maxSplitSize = parseSizeMb(key, value);
        } else if (key == "max_non_split_rounding_mb") {
            c.maxNonSplitRounding = parseSizeMb(key, value);
        } else if (key == "garbage_collection_threshold") {
            c.garbageCollectionThreshold = parseFraction(key, value, false, false);
        } else if (key == "roundup_power2_divisions") {
            if (value.size() >= 2 && value.front() == '[' && value.back() == ']') {
                c.roundupDivisions = parseDivisionList(key, value);
            } else {
                c.roundupDivisions.fill(parseDivisions(key, value));
            }
        } else if (key == "expandable_segments") {
            c.expandableSegments = parseBool(key, value);
        } else if (key == "per_process_memory_fraction") {
            c.perProcessMemoryFraction = parseFraction(key, value, true, true);
        } else if (key == "release_lock_on_device_malloc" || key == "release_lock_on_cudamalloc") {
            c.releaseLockOnDeviceMalloc = parseBool(key, value);
        } else if (key == "pinned_use_background_threads") {
            c.pinnedUseBackgroundThreads = parseBool(key, value);
        } else {
            fail(mtiaErrorInvalidValue,
                 "allocator setting '{}' is not known; the keys are max_split_size_mb, "
                 "max_non_split_rounding_mb, "
                 "garbage_collection_threshold, roundup_power2_divisions, expandable_segments, "
                 "per_process_memory_fraction, release_lock_on_device_malloc (or "
                 "release_lock_on_cudamalloc), "
                 "pinned_use_background_threads",
                 key);
        }
    }
    // PyTorch accepts this pair and then behaves surprisingly (its issues #119452, #123548): an
    // expandable segment has no blocks to keep unsplit.
    if (c.expandableSegments && c.maxSplitSize != kUnlimited)
        fail(mtiaErrorInvalidValue,
             "allocator settings max_split_size_mb:{} and expandable_segments:True cannot be "
             "combined (an expandable "
             "segment has no blocks to keep unsplit)",
             c.maxSplitSize / kMiB);
    return c;
}

std::string AllocConfig::format() const {
    std::string out;
    if (maxSplitSize != kUnlimited)
        out += fmt::format("max_split_size_mb:{},", maxSplitSize / kMiB);
    out += fmt::format("max_non_split_rounding_mb:{},", maxNonSplitRounding / kMiB);
    if (garbageCollectionThreshold > 0.0)
        out += fmt::format("garbage_collection_threshold:{},", garbageCollectionThreshold);
    bool uniform = true;
    for (uint32_t d : roundupDivisions) uniform = uniform && d == roundupDivisions[0];
    if (uniform) {
        out += fmt::format("roundup_power2_divisions:{},", roundupDivisions[0]);
    } else {
        out += "roundup_power2_divisions:[";
        for (size_t i = 0; i + 1 < roundupDivisions.size(); ++i)
            out += fmt::format("{}:{},", size_t{1} << i, roundupDivisions[i]);
        out += fmt::format(">:{}],", roundupDivisions.back());
    }
    out += fmt::format("expandable_segments:{},", boolWord(expandableSegments));
    out += fmt::format("per_process_memory_fraction:{},", perProcessMemoryFraction);
    out += fmt::format("release_lock_on_device_malloc:{},", boolWord(releaseLockOnDeviceMalloc));
    out += fmt::format("pinned_use_background_threads:{}", boolWord(pinnedUseBackgroundThreads));
    return out;
}

}  // namespace mtia::allocator
