#include "cv_stream.hpp"

#include <chrono>
#include <utility>

namespace mtia::bench::baseline {

CvStream::CvStream() : worker_(&CvStream::workerMain, this) {}

CvStream::~CvStream() {
    {
        std::lock_guard lock(mu_);
        stop_ = true;
    }
    workCv_.notify_one();
    worker_.join();
}

void CvStream::enqueue(std::function<void()> task) {
    {
        std::lock_guard lock(mu_);
        tasks_.push_back(std::move(task));
    }
    workCv_.notify_one();
}

bool CvStream::query() {
    std::lock_guard lock(mu_);
    return tasks_.empty() && !running_;
}

void CvStream::synchronize() {
    std::unique_lock lock(mu_);
    idleCv_.wait(lock, [&] { return tasks_.empty() && !running_; });
}

void CvStream::workerMain() {
    std::unique_lock lock(mu_);
    for (;;) {
        workCv_.wait(lock, [&] { return stop_ || !tasks_.empty(); });
        if (tasks_.empty()) return;  // stop_ and nothing left to run
        std::function<void()> task = std::move(tasks_.front());
        tasks_.pop_front();
        running_ = true;
        lock.unlock();
        task();
        task = nullptr;  // whatever it captured goes before the stream looks idle
        lock.lock();
        running_ = false;
        if (tasks_.empty()) idleCv_.notify_all();
    }
}

CvEvent::CvEvent(bool timing) : timing_(timing), state_(std::make_shared<State>()) {}

void CvEvent::record(CvStream& stream) {
    uint64_t number = 0;
    {
        std::lock_guard lock(state_->mu);
        number = ++state_->recorded;
    }
    stream.enqueue([state = state_, number, timing = timing_] {
        const int64_t now = timing ? std::chrono::duration_cast<std::chrono::nanoseconds>(
                                         std::chrono::steady_clock::now().time_since_epoch())
                                         .count()
                                   : 0;
        {
            std::lock_guard lock(state->mu);
            if (number > state->completed) {
                state->completed = number;
                if (timing) state->timestampNs = now;
            }
        }
        state->cv.notify_all();
    });
}

bool CvEvent::query() const {
    std::lock_guard lock(state_->mu);
    return state_->completed >= state_->recorded;
}

void CvEvent::waitFor(State& state, uint64_t record) {
    std::unique_lock lock(state.mu);
    state.cv.wait(lock, [&] { return state.completed >= record; });
}

void CvEvent::synchronize() const {
    uint64_t record = 0;
    {
        std::lock_guard lock(state_->mu);
        record = state_->recorded;
    }
    waitFor(*state_, record);
}

int64_t CvEvent::timestampNs() const {
    std::lock_guard lock(state_->mu);
    return state_->timestampNs;
}

void CvEvent::streamWait(CvStream& stream) const {
    uint64_t record = 0;
    {
        std::lock_guard lock(state_->mu);
        record = state_->recorded;
    }
    if (record == 0) return;  // never recorded: nothing to wait for
    stream.enqueue([state = state_, record] { waitFor(*state, record); });
}

void launchHostFunc(CvStream& stream, void (*fn)(void*), void* userData) {
    stream.enqueue([fn, userData] { fn(userData); });
}

}  // namespace mtia::bench::baseline
