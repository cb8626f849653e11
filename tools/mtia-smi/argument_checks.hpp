// One rule for mtia-smi's numeric options, checked after CLI11 parsed them
// (CLI11 turns "nan", "inf" and "-1" into numbers without a word): a number
// of seconds must be finite, above 0 and at most a bound the option names
// (so that sleeping or waiting that long cannot overflow); a count is a whole
// number in a stated range. Every refusal names the option, what was given and
// what is accepted, and exits 2 (kExitBadArguments).
#pragma once

#include <cstdint>
#include <string>

namespace mtia::smi {

// Seconds given to option (e.g. "-l/--loop"): accepts finite values with 0 < given <= most.
// Throws SmiError(kExitBadArguments) otherwise. Thread-safe (pure).
void checkSeconds(const std::string& option, double given, double most);

// A whole number given to option: accepts least <= given <= most; what says what it counts, for the
// message ("repeats", "a process id"). Throws SmiError(kExitBadArguments) otherwise. Thread-safe
// (pure).
void checkWhole(const std::string& option, int64_t given, int64_t least, int64_t most,
                const std::string& what);

}  // namespace mtia::smi
