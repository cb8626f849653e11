// Where devices write the completion times of timed event records. A slot is
// handed to the driver inside a timestamp command and must stay valid until
// that command completed, even if the event that asked for it is re-recorded
// or destroyed first; so a released slot is reused only once its command is
// known to have completed. Slots live in chunks that are never freed, so the
// memory is bounded by the most timed records pending at once.
#pragma once

#include "streams/stream.hpp"

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

namespace mtia::streams {

class TimestampSlots {
public:
    // The process-wide pool. Never destroyed (engines may write slots during exit).
    static TimestampSlots& instance();

    // A slot for a new timed record. Thread-safe, non-blocking. Throws std::bad_alloc.
    uint64_t* acquire();
    // Gives slot back once command seq of stream has completed (seq 0: at once). Thread-safe,
    // non-blocking, never throws (a slot it cannot track is leaked, never reused early).
    void release(uint64_t* slot, std::shared_ptr<const Stream> stream, uint64_t seq) noexcept;
    // Slots neither free nor pending (for tests).
    size_t inUse() const;

private:
    struct Pending {
        uint64_t* slot;
        std::shared_ptr<const Stream> stream;  // keeps the queue alive for the completion check
        uint64_t seq;
    };
    static constexpr size_t kChunk = 512;
    // Moves pending slots whose command completed to the free list. Called with mu_ held.
    void reclaimLocked(size_t limit);

    mutable std::mutex mu_;
    std::vector<std::unique_ptr<uint64_t[]>> chunks_;
    std::vector<uint64_t*> free_;
    std::deque<Pending> pending_;
    size_t total_ = 0;
};

}  // namespace mtia::streams
