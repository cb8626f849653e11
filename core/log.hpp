// Logging to stderr through fmt, filtered by MTIA_LOG_LEVEL.
#pragma once

#include <fmt/format.h>

#include <string_view>
#include <utility>

namespace mtia {

enum class LogLevel { Trace = 0, Debug, Info, Warn, Error, Off };

void setLogLevel(LogLevel level) noexcept;
bool logEnabled(LogLevel level) noexcept;
void logWrite(LogLevel level, std::string_view message) noexcept;

template <typename... Args>
void log(LogLevel level, fmt::format_string<Args...> format, Args&&... args) noexcept {
    if (!logEnabled(level)) return;
    try {
        logWrite(level, fmt::format(format, std::forward<Args>(args)...));
    } catch (...) {}
}

}  // namespace mtia
