// A submitted command as the engines see it: the caller's command plus what
// submit had to take with it (argument values, a reference that keeps a
// module, a wait target or a command list alive until the command completed).
// A command list (command_list.hpp) holds its commands in the same form.
//
// Laid out for the command log's 128-byte slots: the caller's command fills
// the slot's first cache line (with the slot's publication number); argument
// values and the reference fill the second, which only commands that have
// them touch. A launch without arguments, a copy, a fill, a timestamp or a
// host function therefore moves one cache line from submitter to engine.
#pragma once

#include "kernels.hpp"

#include <mtia/mtia_driver.h>

#include <cstddef>  // offsetof
#include <cstdint>
#include <memory>

namespace mtia::sim {

class CommandList;
class Queue;

// Copies of a launch's argument values: inline up to kInlineBytes (all built-ins), else on the heap
// with the pointer kept inline. Trivially copyable; the owner frees a heap copy with release().
class ArgumentCopy {
public:
    static constexpr size_t kInlineBytes = 48;

    // Packs each args[i] (sizes from kernel) at the kernel's offsets. Throws std::bad_alloc
    // (nothing kept).
    void assign(const Kernel& kernel, void* const* args);
    // Copies the packed values to out (kernel.argBytes <= kMaxArgumentBytes bytes, 16-byte aligned)
    // and points argv[i] at each: the kernel gets values of its own to read and write, so one copy
    // serves any number of runs, also concurrent ones (command lists).
    void copyTo(const Kernel& kernel, unsigned char* out, void** argv) const;
    // Frees the heap copy of a large launch (the kernel tells which).
    void release(const Kernel& kernel) noexcept;

private:
    static bool onHeap(const Kernel& kernel) { return kernel.argBytes > kInlineBytes; }
    const unsigned char* data(const Kernel& kernel) const;

    alignas(16) unsigned char bytes_[kInlineBytes];
};

// Bits of Command::cmd.reserved, which the caller leaves 0 and submit fills.
inline constexpr uint32_t kCommandInjectFault =
    1;  // MTIA_SIM_FAULTS picked this launch (of a list: faultAt)
inline constexpr uint32_t kCommandArgs = 2;   // args holds argument values
inline constexpr uint32_t kCommandHolds = 4;  // holds keeps something alive

struct alignas(64) Command {
    // The command's number. In the log's slots it is also the publication mark that the engine
    // polls (accessed there through std::atomic_ref); numbers only grow.
    uint64_t seq = 0;
    mtiaDrvCommand cmd{};  // u.kernel.args is not used after submit: see args
    std::shared_ptr<void>
        holds;  // a module kernel's module, a wait's target queue, or a command list
    union {
        ArgumentCopy args;  // a kernel launch with arguments (kCommandArgs)
        uint64_t faultAt;   // a command list with kCommandInjectFault: the first sub-command picked
                            // to fault
    };

    uint32_t flags() const { return cmd.reserved; }
    const Kernel& kernel() const { return *reinterpret_cast<const Kernel*>(cmd.u.kernel.kernel); }
    Queue& waitTarget() const { return *reinterpret_cast<Queue*>(cmd.u.wait.queue); }
    const CommandList& list() const {
        return *reinterpret_cast<const CommandList*>(cmd.u.list.list);
    }

    // Moves what other carries into this (a free slot): the first cache line always, the second
    // only when other has arguments, a reference or a list's fault pick. other is left owning
    // nothing.
    void takeFrom(Command& other) noexcept;
    // Drops the reference and frees a heap argument copy; writes to the command only when it held
    // one of them, so the engine leaves plain slots unmodified in its cache and the submitter
    // reusing them does not have to fetch them back.
    void release() noexcept;
};

static_assert(sizeof(Command) == 128 && offsetof(Command, holds) == 64,
              "two cache lines, the second optional");

// A command being prepared on the submitter's stack: released unless it was taken into the log.
struct PendingCommand {
    Command command;
    PendingCommand() = default;
    PendingCommand(const PendingCommand&) = delete;
    PendingCommand& operator=(const PendingCommand&) = delete;
    ~PendingCommand() { command.release(); }
};

}  // namespace mtia::sim
