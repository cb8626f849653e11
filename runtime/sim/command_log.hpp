// The commands of one queue, oldest first. Submitters append one at a time,
// serialised by the queue's submit lock; the one engine that owns the queue
// reads and retires them without any lock, so a steady stream of submissions
// and the engine running them never wait for each other. Commands live in
// linked segments; the engine keeps the last retired segment as a spare for
// the submitters, so a queue in steady use allocates nothing.
#pragma once

#include "command.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace mtia::sim {

class CommandLog {
 public:
  CommandLog();
  ~CommandLog();
  CommandLog(const CommandLog&) = delete;
  CommandLog& operator=(const CommandLog&) = delete;

  // Submitter side, serialised by the caller: stores command as number published() + 1 (setting its
  // seq) and makes it visible to the engine. Returns that number. Throws std::bad_alloc (nothing stored).
  uint64_t append(Command&& command);
  // Commands appended so far. Any thread.
  uint64_t published() const { return published_.load(std::memory_order_seq_cst); }

  // Engine side (the queue's owner): the oldest command not yet retired, or nullptr when there is none.
  Command* front();
  // Engine side: drops the front command's references and moves past it.
  void retire();
  // Engine side: commands retired so far.
  uint64_t retired() const { return retired_; }

  static constexpr size_t kSegment = 128;

 private:
  struct Segment {
    Command slots[kSegment];
    std::atomic<Segment*> next{nullptr};
  };

  // Submitter side.
  Segment* tail_;
  size_t tailIndex_ = 0;
  alignas(64) std::atomic<uint64_t> published_{0};
  // Engine side.
  alignas(64) Segment* head_;
  size_t headIndex_ = 0;
  uint64_t retired_ = 0;
  std::atomic<Segment*> spare_{nullptr};  // handed from the engine to the submitters
};

}  // namespace mtia::sim
