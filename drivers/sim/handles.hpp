// The handles the driver gave out and has not taken back. Every entry looks a
// caller's handle up here before touching the object behind it, so a stale or
// foreign handle is an error (mtiaErrorInvalidHandle) instead of a crash, and
// destroying a handle cannot free an object another thread is using.
#pragma once

#include "command_list.hpp"
#include "kernels.hpp"
#include "memory.hpp"
#include "queue.hpp"

#include <atomic>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

namespace mtia::sim {

struct Handles {
    // Queues, modules, module kernels and command lists. Readers (submit, query) take it shared for
    // the whole call, which keeps the object alive without touching its reference count.
    std::shared_mutex mu;
    std::unordered_map<const Queue*, std::shared_ptr<Queue>> queues;
    // Bumped (under mu, exclusively) whenever a queue handle is destroyed: a thread's cached lookup
    // of a queue stays valid while this has not changed (see ops_queue.cpp). Read by every
    // submission: a line of its own, away from the lock's state.
    alignas(64) std::atomic<uint64_t> queueEpoch{1};
    std::unordered_map<const Module*, std::shared_ptr<Module>> modules;
    std::unordered_map<const Kernel*, std::shared_ptr<Module>>
        kernels;  // module kernels -> their module
    std::unordered_map<const CommandList*, std::shared_ptr<CommandList>> lists;

    // Physical memory: a lock of its own, since its calls are slow (mmap, fallocate) and rare.
    std::mutex memMu;
    std::unordered_map<const PhysicalMemory*, std::unique_ptr<PhysicalMemory>> mems;
};

}  // namespace mtia::sim
