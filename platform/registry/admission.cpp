#include "admission.hpp"

#include <cerrno>
#include <cstring>
#include <ctime>

namespace mtia::registry {

Admission::Admission(Header& header, std::chrono::milliseconds timeout,
                     std::atomic<uint64_t>& recoveries)
    : header_(header) {
    timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    const auto ms = timeout.count();
    deadline.tv_sec += static_cast<time_t>(ms / 1000);
    deadline.tv_nsec += static_cast<long>((ms % 1000) * 1000000);
    if (deadline.tv_nsec >= 1000000000) {
        deadline.tv_sec += 1;
        deadline.tv_nsec -= 1000000000;
    }
    const int rc = pthread_mutex_timedlock(&header_.admit, &deadline);
    if (rc == 0) {
        locked_ = true;
    } else if (rc == EOWNERDEAD) {
        // The previous holder died inside: nothing it guarded needs rebuilding (see the file
        // comment).
        pthread_mutex_consistent(&header_.admit);
        recoveries.fetch_add(1, std::memory_order_relaxed);
        locked_ = true;
    } else if (rc == ETIMEDOUT) {
        status_ = Status::error(
            Code::Timeout, "the registry's admission lock is held by a live process for over " +
                               std::to_string(ms) + " ms");
    } else {
        // ENOTRECOVERABLE: someone unlocked it without repairing it. Poison the object so that the
        // next opener recreates it rather than everyone failing forever.
        if (rc == ENOTRECOVERABLE)
            header_.state.store(static_cast<uint32_t>(ObjectState::Poisoned),
                                std::memory_order_release);
        status_ =
            Status::error(Code::System, std::string("the registry's admission lock failed: ") +
                                            std::strerror(rc));
    }
}

Admission::~Admission() {
    if (locked_) pthread_mutex_unlock(&header_.admit);
}

}  // namespace mtia::registry
