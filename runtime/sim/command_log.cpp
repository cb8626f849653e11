#include "command_log.hpp"

#include <utility>

namespace mtia::sim {

CommandLog::CommandLog() : tail_(new Segment), head_(tail_) {}

CommandLog::~CommandLog() {
  for (Segment* s = head_; s != nullptr;) {
    Segment* next = s->next.load(std::memory_order_relaxed);
    delete s;
    s = next;
  }
  delete spare_.load(std::memory_order_relaxed);
}

uint64_t CommandLog::append(Command&& command) {
  if (tailIndex_ == kSegment) {
    Segment* fresh = spare_.exchange(nullptr, std::memory_order_acquire);
    if (fresh == nullptr) fresh = new Segment;  // may throw: nothing changed yet
    // A recycled segment keeps the numbers of its earlier commands; they are all smaller than the
    // ones the engine looks for next, so they never pass for published.
    fresh->next.store(nullptr, std::memory_order_relaxed);
    tail_->next.store(fresh, std::memory_order_release);
    tail_ = fresh;
    tailIndex_ = 0;
  }
  const uint64_t seq = published_.load(std::memory_order_relaxed) + 1;
  command.seq = seq;
  Slot& slot = tail_->slots[tailIndex_++];
  slot.command = std::move(command);
  slot.seq.store(seq, std::memory_order_release);
  // The queue's idle handshake orders this store before its look at the scheduled flag (a fence).
  published_.store(seq, std::memory_order_release);
  return seq;
}

const CommandLog::Slot* CommandLog::nextSlot() const {
  if (headIndex_ < kSegment) return &head_->slots[headIndex_];
  // Published past this segment only once the submitter linked the next one.
  const Segment* next = head_->next.load(std::memory_order_acquire);
  return next != nullptr ? &next->slots[0] : nullptr;
}

bool CommandLog::hasWork() const {
  const Slot* slot = nextSlot();
  return slot != nullptr && slot->seq.load(std::memory_order_acquire) == retired_ + 1;
}

Command* CommandLog::front() {
  if (!hasWork()) return nullptr;
  if (headIndex_ == kSegment) {
    Segment* done = head_;
    head_ = head_->next.load(std::memory_order_acquire);
    headIndex_ = 0;
    delete spare_.exchange(done, std::memory_order_acq_rel);
  }
  return &head_->slots[headIndex_].command;
}

void CommandLog::retire() {
  head_->slots[headIndex_].command.release();
  ++headIndex_;
  ++retired_;
}

}  // namespace mtia::sim
