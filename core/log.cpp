#include "core/log.hpp"

#include <atomic>
#include <cstdio>
#include <mutex>

namespace mtia {
namespace {
std::atomic<int> gLevel{static_cast<int>(LogLevel::Warn)};
constexpr const char* kNames[] = {"trace", "debug", "info", "warn", "error", "off"};
}  // namespace

void setLogLevel(LogLevel level) noexcept {
    gLevel.store(static_cast<int>(level), std::memory_order_relaxed);
}

bool logEnabled(LogLevel level) noexcept {
    return level != LogLevel::Off &&
           static_cast<int>(level) >= gLevel.load(std::memory_order_relaxed);
}

void logWrite(LogLevel level, std::string_view message) noexcept {
    // One fprintf per line so lines from different threads do not interleave.
    std::fprintf(stderr, "[mtia %s] %.*s\n", kNames[static_cast<int>(level)],
                 static_cast<int>(message.size()), message.data());
}

}  // namespace mtia
