// One device's trace of allocator actions while recording in mode All: the
// newest maxEntries entries, older ones overwritten (PyTorch's ring buffer).
// Grows as it fills, so a large capacity costs nothing until used. Not
// thread-safe: the device allocator's lock guards it.
#pragma once

#include "allocator/history/alloc_context.hpp"
#include "allocator/pool_id.hpp"
#include "allocator/snapshot/model.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mtia::allocator {

struct TraceRecord {
    mem::Action action = mem::Action::Other;
    uint32_t metadata = 0;  // user_metadata id (HistoryRecorder::metadataText)
    uint64_t addr = 0;      // device_free for Oom
    uint64_t size = 0;
    uint64_t stream = 0;
    PoolId pool;
    uint64_t stamp = 0;               // HistoryRecorder::stamp(), converted at snapshot time
    AllocContext* context = nullptr;  // one reference, held by the ring
};

class TraceRing {
public:
    // Adds r (taking its context reference); returns the context of the entry it overwrote (the
    // caller drops that reference), or null. Throws std::bad_alloc (r not added; its reference
    // stays the caller's).
    AllocContext* push(const TraceRecord& r);
    // Keeps the newest capacity entries; returns the contexts of those dropped.
    std::vector<AllocContext*> resize(size_t capacity);
    // Empties the ring; returns the contexts it held.
    std::vector<AllocContext*> clear();

    size_t size() const { return entries_.size(); }
    size_t capacity() const { return capacity_; }
    // Calls fn(entry) oldest first.
    template <class Fn>
    void forEach(Fn&& fn) const {
        for (size_t i = 0; i < entries_.size(); ++i) fn(entries_[(head_ + i) % entries_.size()]);
    }

private:
    std::vector<TraceRecord> entries_;
    size_t head_ = 0;  // the oldest entry once full
    size_t capacity_ = 0;
};

}  // namespace mtia::allocator
