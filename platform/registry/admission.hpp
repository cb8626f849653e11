// The admission mutex: one robust, process-shared pthread mutex in the
// header that serialises capacity reservations across processes. A holder
// killed inside it makes the next locker see EOWNERDEAD; the state it guards
// is only the slots' own counters, and totals are derived from live slots, so
// marking it consistent is the whole repair.
#pragma once

#include "layout.hpp"
#include "status.hpp"

#include <atomic>
#include <chrono>

namespace mtia::registry {

class Admission {
public:
    // Locks header.admit; status() says whether it succeeded (Code::Timeout, Code::System).
    Admission(Header& header, std::chrono::milliseconds timeout, std::atomic<uint64_t>& recoveries);
    ~Admission();
    Admission(const Admission&) = delete;
    Admission& operator=(const Admission&) = delete;

    const Status& status() const { return status_; }

private:
    Header& header_;
    Status status_;
    bool locked_ = false;
};

}  // namespace mtia::registry
