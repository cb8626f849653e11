// What the benchmark programs (alloc_bench, graph_bench, streams_bench) share: the status check
// that skips a benchmark with the runtime's message and marks the run failed, owners of runtime
// handles, and the ns_per_op counter of a wall-timed loop. Public C ABI only.
#pragma once

#include <benchmark/benchmark.h>
#include <mtia/mtia.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace mtia::bench {

using Clock = std::chrono::steady_clock;

// The program's name: the prefix of its messages on stderr (main sets it before anything runs).
inline const char* gProgram = "bench";
// Set when a benchmark failed: main then exits with status 1, so the smoke tests notice.
inline std::atomic<bool> gFailed{false};

// Skips the benchmark with message (also written to stderr) and marks the run failed; false.
inline bool fail(benchmark::State& state, const std::string& message) {
    gFailed.store(true);
    std::fprintf(stderr, "%s: %s\n", gProgram, message.c_str());
    state.SkipWithError(message.c_str());
    return false;
}

[[gnu::noinline]] inline bool failedCall(benchmark::State& state, mtiaError_t status,
                                         const char* call) {
    return fail(state, std::string(call) + " returned " + mtiaGetErrorName(status) + ": " +
                           mtiaGetLastErrorMessage());
}

// False (and the benchmark skipped with the runtime's message) unless status is mtiaSuccess.
// Inline, so that a timed call costs no more than the call itself.
inline bool ok(benchmark::State& state, mtiaError_t status, const char* call) {
    return status == mtiaSuccess || failedCall(state, status, call);
}
#define OK(state, call) ::mtia::bench::ok((state), (call), #call)

// Owners of runtime handles, so that an early return leaves nothing behind.
struct Stream {
    mtiaStream_t h = nullptr;
    Stream() = default;
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;
    ~Stream() {
        if (h != nullptr) {
            mtiaStreamSynchronize(h);
            mtiaStreamDestroy(h);
        }
    }
};
struct Event {
    mtiaEvent_t h = nullptr;
    Event() = default;
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    ~Event() {
        if (h != nullptr) mtiaEventDestroy(h);
    }
};
struct Graph {
    mtiaGraph_t h = nullptr;
    Graph() = default;
    Graph(const Graph&) = delete;
    Graph& operator=(const Graph&) = delete;
    ~Graph() {
        if (h != nullptr) mtiaGraphDestroy(h);  // ends a capture left open by a failure, too
    }
};

// Wall time of the benchmark loop per operation: call right after the loop with the time taken
// right before it and the operations one iteration performs.
inline void reportPerOp(benchmark::State& state, Clock::time_point start, int64_t opsPerIteration) {
    const double ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
    const int64_t ops = static_cast<int64_t>(state.iterations()) * opsPerIteration;
    state.SetItemsProcessed(ops);
    state.counters["ns_per_op"] = ops > 0 ? ns / static_cast<double>(ops) : 0.0;
}

}  // namespace mtia::bench
