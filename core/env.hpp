// Parsing of environment settings. Every parser throws Error(InvalidValue)
// with a message naming the variable, the bad value and what is accepted.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

namespace mtia {

// Reads one variable; injectable so tests need not touch the process env.
using EnvLookup = std::function<std::optional<std::string>(std::string_view name)>;
EnvLookup processEnv();

int64_t parseInt(std::string_view key, std::string_view value, int64_t min, int64_t max);
// Returns the index of value in choices (exact match).
int parseChoice(std::string_view key, std::string_view value,
                std::initializer_list<std::string_view> choices);

}  // namespace mtia
