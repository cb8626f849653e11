// Calls that might hang or block, run on a thread of their own: the test sees whether the call
// returned or is blocked, and a call that hangs for good fails the test (the process aborts with a
// note) instead of hanging until the test runner's timeout.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "eventually.hpp"

namespace mtia_test {

// The calling thread's kernel thread id.
pid_t currentTid();

// The kernel's scheduling state of thread tid of this process ('R' running, 'S' sleeping, ...), or
// 0.
char threadState(pid_t tid);

// Waits until thread tid has been asleep in the kernel for a few looks in a row (it is blocked, not
// just descheduled); false when that did not happen within timeout.
bool waitUntilAsleep(pid_t tid, Clock::duration timeout = kHang);

// Runs fn on its own thread. If the owner goes away while fn still runs, unblock() runs first (say,
// opening a latch) so the join cannot hang; if fn still does not return within kHang after that,
// the runtime has hung for good and the process aborts.
class Async {
public:
    explicit Async(std::function<void()> fn, std::function<void()> unblock = {});
    ~Async();
    Async(const Async&) = delete;
    Async& operator=(const Async&) = delete;

    bool done() { return waitFor(0s); }
    bool waitFor(Clock::duration timeout);
    // True once the call is blocked (asleep in the kernel three looks in a row); false when it
    // returned first or timeout passed.
    bool waitBlocked(Clock::duration timeout = kHang);

private:
    // Shared with the call's thread.
    struct State {
        std::mutex mu;
        std::condition_variable cv;
        bool done = false;
        std::atomic<pid_t> tid{0};
    };
    std::shared_ptr<State> state_;
    std::function<void()> unblock_;
    std::thread thread_;
};

// Whether fn returns within timeout. If it does not, unblock() runs and fn is joined.
bool returnsWithin(Clock::duration timeout, std::function<void()> fn,
                   std::function<void()> unblock = {});

}  // namespace mtia_test
