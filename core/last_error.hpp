// The thread-local detail message behind mtiaGetLastErrorMessage().
#pragma once

#include <string>

namespace mtia {

// Replaces this thread's message. Never throws (falls back to a fixed text).
void setLastErrorMessage(std::string message) noexcept;
// This thread's message; "" before any failure. Valid until the next set.
const char* lastErrorMessage() noexcept;

}  // namespace mtia
