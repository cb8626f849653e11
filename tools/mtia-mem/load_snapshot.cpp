#include "load_snapshot.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <unistd.h>

namespace mtia::mem {

namespace {

// Redraws one line at most five times a second, and clears it when the read ends (however it ends).
class TerminalProgress {
public:
    explicit TerminalProgress(const std::string& path)
        : path_(path), start_(Clock::now()), last_(start_) {}
    ~TerminalProgress() {
        if (drawn_) fmt::print(stderr, "\r\033[K");
    }
    void operator()(std::string_view stage, double fraction) {
        const auto now = Clock::now();
        // Quiet for the first half second: short reads draw nothing.
        if (now - start_ < std::chrono::milliseconds(500) ||
            now - last_ < std::chrono::milliseconds(200))
            return;
        last_ = now;
        drawn_ = true;
        fmt::print(stderr, "\r\033[Kmtia-mem: {}: {} {:.0f}%", path_, stage, fraction * 100);
        std::fflush(stderr);
    }

private:
    using Clock = std::chrono::steady_clock;
    const std::string& path_;
    Clock::time_point start_, last_;
    bool drawn_ = false;
};

}  // namespace

Snapshot loadSnapshot(const std::string& path, ReadOptions options) {
    if (!isatty(STDERR_FILENO)) return readSnapshot(path, options);
    TerminalProgress progress(path);
    options.progress = [&progress](std::string_view stage, double fraction) {
        progress(stage, fraction);
    };
    return readSnapshot(path, options);
}

}  // namespace mtia::mem
