// How a subcommand describes its command line, as plain data: its name, its
// options in the order help lists them, and what runs when it is chosen.
// main.cpp, the one file that includes CLI11, turns these into CLI11's
// subcommands (CLI11 is header-only and costs ~20 s of compiling per file that
// includes it, so the subcommands do not).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

namespace mtia::mem {

// Where an option's value goes. Its type decides how CLI11 parses it and what help calls it (TEXT,
// UINT, INT); a bool is a flag (no value). size_t is uint64_t on the platforms we build for (LP64),
// so it has no entry of its own (a variant cannot hold the same type twice).
using OptionTarget = std::variant<std::string*, bool*, int*, uint64_t*>;
static_assert(std::is_same_v<size_t, uint64_t>,
              "OptionTarget: size_t options need an entry of their own");

// Accepts a whole number of at least least; the refusal names what was given and what is accepted
// ("--top: got 0; give a whole number of allocation sites, 1 or more"). CLI11's own number checks
// print their range as 0.000000 to 1.79e308.
struct WholeAtLeast {
    long long least = 0;
    std::string what;
};

struct OptionSpec {
    std::string names;  // "-o,--output", or a positional's name ("SNAP")
    OptionTarget target;
    std::string help;
    bool required = false;
    bool showDefault = false;  // help shows the value target holds when the option is added
    std::optional<WholeAtLeast> atLeast = {};
    std::vector<const char*> oneOf = {};  // when not empty: the only values accepted
};

struct CommandSpec {
    std::string name;
    std::string description;
    std::vector<OptionSpec> options;
    std::function<void()> run;
};

}  // namespace mtia::mem
