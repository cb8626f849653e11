#include "argument_checks.hpp"

#include "smi_error.hpp"

#include <cmath>
#include <cstdio>

namespace mtia::smi {

namespace {

// "0.3", "nan", "inf", "-1": as the user would have typed it (to_string would write 0.300000).
std::string shown(double v) {
    char text[64];
    std::snprintf(text, sizeof text, "%g", v);
    return text;
}

}  // namespace

void checkSeconds(const std::string& option, double given, double most) {
    if (std::isfinite(given) && given > 0 && given <= most) return;
    throw SmiError(kExitBadArguments, option + ": got " + shown(given) +
                                          "; give a number of seconds above 0 and at most " +
                                          shown(most));
}

void checkWhole(const std::string& option, int64_t given, int64_t least, int64_t most,
                const std::string& what) {
    if (given >= least && given <= most) return;
    throw SmiError(kExitBadArguments, option + ": got " + std::to_string(given) + "; give " + what +
                                          ", " + std::to_string(least) + " to " +
                                          std::to_string(most));
}

}  // namespace mtia::smi
