#include "core/env.hpp"

#include "core/error.hpp"

#include <charconv>
#include <cstdlib>

namespace mtia {

EnvLookup processEnv() {
    return [](std::string_view name) -> std::optional<std::string> {
        const char* v = std::getenv(std::string(name).c_str());
        if (v == nullptr) return std::nullopt;
        return std::string(v);
    };
}

int64_t parseInt(std::string_view key, std::string_view value, int64_t min, int64_t max) {
    int64_t out = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), out);
    if (value.empty() || ec != std::errc() || end != value.data() + value.size() || out < min ||
        out > max)
        fail(mtiaErrorInvalidValue, "{}='{}' is not valid: expected an integer from {} to {}", key,
             value, min, max);
    return out;
}

int parseChoice(std::string_view key, std::string_view value,
                std::initializer_list<std::string_view> choices) {
    int i = 0;
    for (std::string_view c : choices) {
        if (c == value) return i;
        ++i;
    }
    std::string accepted;
    for (std::string_view c : choices) {
        if (!accepted.empty()) accepted += ", ";
        accepted += c;
    }
    fail(mtiaErrorInvalidValue, "{}='{}' is not valid: expected one of {}", key, value, accepted);
}

}  // namespace mtia
