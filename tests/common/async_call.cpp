#include "async_call.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace mtia_test {

pid_t currentTid() {
    return static_cast<pid_t>(::syscall(SYS_gettid));
}

char threadState(pid_t tid) {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/self/task/%d/stat", static_cast<int>(tid));
    FILE* f = std::fopen(path, "r");
    if (f == nullptr) return 0;
    char line[512] = {};
    const bool read = std::fgets(line, sizeof line, f) != nullptr;
    std::fclose(f);
    const char* close =
        read ? std::strrchr(line, ')') : nullptr;  // the name may hold spaces and ')'
    return close != nullptr && close[1] == ' ' ? close[2] : 0;
}

bool waitUntilAsleep(pid_t tid, Clock::duration timeout) {
    int asleep = 0;
    const auto deadline = Clock::now() + timeout;
    while (asleep < 3) {
        if (Clock::now() > deadline) return false;
        asleep = threadState(tid) == 'S' ? asleep + 1 : 0;
        std::this_thread::sleep_for(20ms);
    }
    return true;
}

Async::Async(std::function<void()> fn, std::function<void()> unblock)
    : state_(std::make_shared<State>()), unblock_(std::move(unblock)) {
    std::shared_ptr<State> st = state_;
    thread_ = std::thread([st, fn = std::move(fn)] {
        st->tid.store(currentTid());
        fn();
        std::lock_guard lock(st->mu);
        st->done = true;
        st->cv.notify_all();
    });
}

Async::~Async() {
    if (!waitFor(0s) && unblock_) unblock_();
    if (!waitFor(kHang)) {
        std::fprintf(
            stderr,
            unblock_ ? "a runtime call did not return even after its work was unblocked: aborting\n"
                     : "a runtime call did not return: aborting\n");
        std::abort();
    }
    thread_.join();
}

bool Async::waitFor(Clock::duration timeout) {
    std::unique_lock lock(state_->mu);
    return state_->cv.wait_for(lock, timeout, [&] { return state_->done; });
}

bool Async::waitBlocked(Clock::duration timeout) {
    int asleep = 0;
    const auto deadline = Clock::now() + timeout;
    while (asleep < 3) {
        if (done() || Clock::now() > deadline) return false;
        const pid_t tid = state_->tid.load();
        asleep = tid != 0 && threadState(tid) == 'S' ? asleep + 1 : 0;
        std::this_thread::sleep_for(20ms);
    }
    return true;
}

bool returnsWithin(Clock::duration timeout, std::function<void()> fn,
                   std::function<void()> unblock) {
    Async call(std::move(fn), std::move(unblock));
    return call.waitFor(timeout);
}

}  // namespace mtia_test
