// Bounded waiting: how long a wait may take before it counts as a hang, and polling until a
// condition holds. Uses no runtime call (the fork-based tests and the sim's tests use it too).
#pragma once

#include <chrono>
#include <functional>

namespace mtia_test {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// How long a wait may take before it counts as a hang (generous: loaded machines, sanitizers).
inline constexpr Clock::duration kHang = 30s;
// How long to watch for something that must not happen (a blocked stream finishing, a call
// returning).
inline constexpr Clock::duration kSettle = 100ms;

// Polls (every millisecond) until pred() holds; false when timeout passed first.
bool eventually(const std::function<bool()>& pred, Clock::duration timeout = kHang);

}  // namespace mtia_test
