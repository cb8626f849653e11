// The commands of one queue, oldest first. Submitters append one at a time,
// serialised by the queue's submit lock; the one engine that owns the queue
// reads and retires them without any lock, so a steady stream of submissions
// and the engine running them never wait for each other. Commands live in
// linked segments; the engine keeps the last retired segment as a spare for
// the submitters, so a queue in steady use allocates nothing.
//
// Each slot carries its own publication number (Command::seq), which the
// engine polls, so the engine never reads the submitters' counter on its hot
// path: the only cache lines the two sides share are the slots themselves
// (see command.hpp for how little of a slot a command touches). Submitter and
// engine fields sit on cache lines of their own.
#pragma once

#include "command.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace mtia::sim {

class CommandLog {
public:
    CommandLog();
    // Releases what commands never retired still hold.
    ~CommandLog();
    CommandLog(const CommandLog&) = delete;
    CommandLog& operator=(const CommandLog&) = delete;

    // Submitter side, serialised by the caller: takes command over (Command::takeFrom) as number
    // published() + 1, sets its seq and makes it visible to the engine. Returns that number. Throws
    // std::bad_alloc (command untouched, nothing stored).
    uint64_t append(Command& command);
    // Commands appended so far. Any thread.
    uint64_t published() const { return published_.load(std::memory_order_acquire); }

    // Engine side (the queue's owner): the oldest command not yet retired, or nullptr when there is
    // none.
    Command* front();
    // Engine side: whether a command beyond those retired is published. Looks at the next slot
    // only.
    bool hasWork() const;
    // Engine side: drops the front command's references and moves past it.
    void retire();
    // Engine side: commands retired so far.
    uint64_t retired() const { return retired_; }

    static constexpr size_t kSegment = 128;
    static constexpr size_t kPrefetchAhead =
        4;  // slots either side fetches ahead of the one it works on

private:
    struct Segment {
        Command slots[kSegment];
        std::atomic<Segment*> next{nullptr};
    };
    // The slot after the last retired one, or nullptr when its segment is not linked yet.
    const Command* nextSlot() const;

    // Submitter side.
    alignas(64) Segment* tail_;
    size_t tailIndex_ = 0;
    std::atomic<uint64_t> published_{0};
    // Engine side.
    alignas(64) Segment* head_;
    size_t headIndex_ = 0;
    uint64_t retired_ = 0;
    uint64_t knownPublished_ = 0;                       // a recent reading of published_
    alignas(64) std::atomic<Segment*> spare_{nullptr};  // handed from the engine to the submitters
};

}  // namespace mtia::sim
