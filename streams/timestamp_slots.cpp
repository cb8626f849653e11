#include "streams/timestamp_slots.hpp"

namespace mtia::streams {

TimestampSlots& TimestampSlots::instance() {
    static TimestampSlots* pool = new TimestampSlots();  // leaky on purpose, see the header
    return *pool;
}

void TimestampSlots::reclaimLocked(size_t limit) {
    // Records on one stream complete in order, so the oldest pending slot is the likeliest done.
    for (size_t checked = 0; checked < limit && !pending_.empty(); ++checked) {
        Pending& p = pending_.front();
        bool done = false;
        try {
            done = p.stream->completed(p.seq);
        } catch (...) {
            done = false;  // the driver could not say: keep the slot out of use
        }
        if (!done) {
            pending_.push_back(std::move(p));  // look at the others first
            pending_.pop_front();
            continue;
        }
        free_.push_back(p.slot);
        pending_.pop_front();
    }
}

uint64_t* TimestampSlots::acquire() {
    std::lock_guard lock(mu_);
    if (free_.empty()) reclaimLocked(pending_.size());
    if (free_.empty()) {
        chunks_.push_back(std::make_unique<uint64_t[]>(kChunk));
        free_.reserve(free_.size() + kChunk);
        for (size_t i = kChunk; i > 0; --i) free_.push_back(&chunks_.back()[i - 1]);
        total_ += kChunk;
    }
    uint64_t* slot = free_.back();
    free_.pop_back();
    *slot = 0;
    return slot;
}

void TimestampSlots::release(uint64_t* slot, std::shared_ptr<const Stream> stream,
                             uint64_t seq) noexcept {
    if (slot == nullptr) return;
    try {
        std::lock_guard lock(mu_);
        if (seq == 0 || !stream) {
            free_.push_back(slot);
            return;
        }
        pending_.push_back(Pending{slot, std::move(stream), seq});
        // Bound the list without scanning it on every release.
        if (pending_.size() > 64) reclaimLocked(8);
    } catch (...) {
        // Out of memory while tracking: leaking one slot is safe, reusing it early would not be.
    }
}

size_t TimestampSlots::inUse() const {
    std::lock_guard lock(mu_);
    return total_ - free_.size() - pending_.size();
}

}  // namespace mtia::streams
