#include "allocator/history/trace_ring.hpp"

#include <algorithm>

namespace mtia::allocator {

AllocContext* TraceRing::push(const TraceRecord& r) {
    if (capacity_ == 0) return r.context;  // not tracing: nothing kept
    if (entries_.size() < capacity_) {
        entries_.push_back(r);
        return nullptr;
    }
    TraceRecord& slot = entries_[head_];
    AllocContext* old = slot.context;
    slot = r;
    head_ = (head_ + 1) % entries_.size();
    return old;
}

std::vector<AllocContext*> TraceRing::resize(size_t capacity) {
    std::vector<AllocContext*> dropped;
    if (entries_.size() > capacity) {
        const size_t drop = entries_.size() - capacity;
        std::vector<TraceRecord> kept;
        kept.reserve(capacity);
        size_t i = 0;
        forEach([&](const TraceRecord& r) {
            if (i++ < drop) {
                if (r.context != nullptr) dropped.push_back(r.context);
            } else {
                kept.push_back(r);
            }
        });
        entries_ = std::move(kept);
        head_ = 0;
    } else if (head_ != 0) {  // oldest first again, so that growing appends in order
        std::rotate(entries_.begin(), entries_.begin() + static_cast<ptrdiff_t>(head_),
                    entries_.end());
        head_ = 0;
    }
    capacity_ = capacity;
    return dropped;
}

std::vector<AllocContext*> TraceRing::clear() {
    std::vector<AllocContext*> held;
    for (const TraceRecord& r : entries_)
        if (r.context != nullptr) held.push_back(r.context);
    entries_ = {};
    head_ = 0;
    return held;
}

}  // namespace mtia::allocator
