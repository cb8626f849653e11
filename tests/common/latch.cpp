#include "latch.hpp"

#include <utility>

#include "host_launch.hpp"

namespace mtia_test {

Latch::Latch() : state_(std::make_shared<State>()) {}

mtiaError_t Latch::block(mtiaStream_t s, std::function<void()> onEnter) {
    std::shared_ptr<State> st = state_;
    return launchHost(s, [st, onEnter = std::move(onEnter)] {
        if (onEnter) onEnter();
        std::unique_lock lock(st->mu);
        ++st->entered;
        st->cv.notify_all();
        st->cv.wait_for(lock, kMaxBlock, [&] { return st->open; });
    });
}

void Latch::open() {
    std::lock_guard lock(state_->mu);
    state_->open = true;
    state_->cv.notify_all();
}

bool Latch::waitEntered(int n, Clock::duration timeout) {
    std::unique_lock lock(state_->mu);
    return state_->cv.wait_for(lock, timeout, [&] { return state_->entered >= n; });
}

}  // namespace mtia_test
