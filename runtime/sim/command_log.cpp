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
    fresh->next.store(nullptr, std::memory_order_relaxed);
    tail_->next.store(fresh, std::memory_order_release);
    tail_ = fresh;
    tailIndex_ = 0;
  }
  const uint64_t seq = published_.load(std::memory_order_relaxed) + 1;
  command.seq = seq;
  tail_->slots[tailIndex_++] = std::move(command);
  // Sequentially consistent: the queue's idle handshake reads this after clearing its scheduled flag.
  published_.store(seq, std::memory_order_seq_cst);
  return seq;
}

Command* CommandLog::front() {
  if (retired_ == published_.load(std::memory_order_acquire)) return nullptr;
  if (headIndex_ == kSegment) {
    // Published past this segment, so the submitter linked the next one before publishing.
    Segment* next = head_->next.load(std::memory_order_acquire);
    Segment* done = head_;
    head_ = next;
    headIndex_ = 0;
    delete spare_.exchange(done, std::memory_order_acq_rel);
  }
  return &head_->slots[headIndex_];
}

void CommandLog::retire() {
  head_->slots[headIndex_].release();
  ++headIndex_;
  ++retired_;
}

}  // namespace mtia::sim
