// mtiaDeviceReset's part of the allocator: everything goes back to the device at once, whatever
// is still allocated, as if the allocator had just been created.
#include "allocator/device_allocator.hpp"

namespace mtia::allocator {

void DeviceAllocator::releaseAll() noexcept {
    struct DrainAfterUnlock {  // as free(): history contexts dropped here go back after the lock
        HistoryRecorder& history;
        ~DrainAfterUnlock() { history.drain(); }
    } drain{context_.history()};
    Lock lock(mu_);
    // Waits for streams are moot: the device's work has completed or was dropped by its fault.
    pending_.clear();
    deferredFrees_.clear();
    releasable_.clear();
    memory_.release(held_);
    std::vector<Segment*> all;
    all.reserve(segments_.size());
    for (auto& [base, seg] : segments_) all.push_back(seg);
    for (Segment* seg : all) {
        // Live blocks are given up with their segment: no free will come for them that the
        // allocator would accept.
        for (Block* b = seg->head; b != nullptr; b = b->next) {
            if (b->allocated) noteFreeCompleted(b);  // drops its history context
            b->allocated = false;
            b->pendingUses = 0;
            b->streamUses.clear();
        }
        releaseSegment(seg);
    }
    live_.clear();
    routes_.clear();
    streamRoutes_ = 0;
    pools_.clear();
    stats_ = DeviceStats{};
    memory_.reportAllocated(0);
}

}  // namespace mtia::allocator
