#include "command_log.hpp"

namespace mtia::sim {
namespace {

uint64_t loadMark(const Command& slot) {
    return std::atomic_ref<uint64_t>(const_cast<uint64_t&>(slot.seq))
        .load(std::memory_order_acquire);
}

}  // namespace

CommandLog::CommandLog() : tail_(new Segment), head_(tail_) {}

CommandLog::~CommandLog() {
    while (front() != nullptr) retire();
    for (Segment* s = head_; s != nullptr;) {
        Segment* next = s->next.load(std::memory_order_relaxed);
        delete s;
        s = next;
    }
    delete spare_.load(std::memory_order_relaxed);
}

uint64_t CommandLog::append(Command& command) {
    if (tailIndex_ == kSegment) {
        Segment* fresh = spare_.exchange(nullptr, std::memory_order_acquire);
        if (fresh == nullptr) fresh = new Segment;  // may throw: nothing changed yet
        // A recycled segment keeps the numbers of its earlier commands; they are all smaller than
        // the ones the engine looks for next, so they never pass for published.
        fresh->next.store(nullptr, std::memory_order_relaxed);
        tail_->next.store(fresh, std::memory_order_release);
        tail_ = fresh;
        tailIndex_ = 0;
    }
    const uint64_t seq = published_.load(std::memory_order_relaxed) + 1;
    // The engine read these slots when they last held commands. Stores are committed in order, so a
    // store that has to win a slot's cache line back stalls every later store of this thread: ask
    // for the line a few commands ahead instead, without waiting for it.
    if (tailIndex_ + kPrefetchAhead < kSegment)
        __builtin_prefetch(&tail_->slots[tailIndex_ + kPrefetchAhead], 1);
    Command& slot = tail_->slots[tailIndex_++];
    slot.takeFrom(command);
    std::atomic_ref<uint64_t>(slot.seq).store(seq, std::memory_order_release);
    // The queue's idle handshake orders this store before its look at the scheduled flag (a fence).
    published_.store(seq, std::memory_order_release);
    return seq;
}

const Command* CommandLog::nextSlot() const {
    if (headIndex_ < kSegment) return &head_->slots[headIndex_];
    // Published past this segment only once the submitter linked the next one.
    const Segment* next = head_->next.load(std::memory_order_acquire);
    return next != nullptr ? &next->slots[0] : nullptr;
}

bool CommandLog::hasWork() const {
    const Command* slot = nextSlot();
    return slot != nullptr && loadMark(*slot) == retired_ + 1;
}

Command* CommandLog::front() {
    if (!hasWork()) return nullptr;
    if (headIndex_ == kSegment) {
        Segment* done = head_;
        head_ = head_->next.load(std::memory_order_acquire);
        headIndex_ = 0;
        delete spare_.exchange(done, std::memory_order_acq_rel);
    }
    // With a backlog, fetch the slots a few commands ahead while this one runs: they were written
    // on the submitter's CPU, and fetching them one by one would cost a full cache miss per
    // command. Only slots known to be published are fetched (the submitters' counter is read now
    // and then, not per command), so no line is pulled away from a submitter that is still writing
    // it.
    if (retired_ + kPrefetchAhead >= knownPublished_ && (retired_ & 15) == 0)
        knownPublished_ = published_.load(std::memory_order_relaxed);
    if (retired_ + kPrefetchAhead < knownPublished_ && headIndex_ + kPrefetchAhead < kSegment)
        __builtin_prefetch(&head_->slots[headIndex_ + kPrefetchAhead], 0);
    return &head_->slots[headIndex_];
}

void CommandLog::retire() {
    head_->slots[headIndex_].release();
    ++headIndex_;
    ++retired_;
}

}  // namespace mtia::sim
