// A latch: host functions that block their streams until the test opens it, so a test can hold a
// stream (or an engine) at a known point.
#pragma once

#include <mtia/mtia.h>

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>

#include "eventually.hpp"

namespace mtia_test {

class Latch {
public:
    // How long a blocked host function waits at most, so a forgotten latch cannot hang the process.
    static constexpr auto kMaxBlock = 60s;

    Latch();
    ~Latch() { open(); }
    Latch(const Latch&) = delete;
    Latch& operator=(const Latch&) = delete;

    // Queues on s a host function that runs onEnter (if any), then blocks until open().
    mtiaError_t block(mtiaStream_t s, std::function<void()> onEnter = {});
    void open();
    // Waits until n host functions of this latch have started blocking.
    bool waitEntered(int n = 1, Clock::duration timeout = kHang);

private:
    // Shared with the queued host functions, which may run after the latch is gone.
    struct State {
        std::mutex mu;
        std::condition_variable cv;
        bool open = false;
        int entered = 0;
    };
    std::shared_ptr<State> state_;
};

}  // namespace mtia_test
