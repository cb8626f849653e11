// Graph capture and replay benchmarks, through the public C ABI only. Each replay workload runs,
// in the same binary and the same run, next to its eager reference: the same kernels launched
// one by one on streams.
//
//   replay_N/ours, replay_N/eager   N empty kernels (builtin noop) in a straight line: one replay
//                                   (or N launches), then mtiaStreamSynchronize. ns_per_op: per
//                                   node.
//   instantiate_N/ours              mtiaGraphInstantiate alone of a kept N-node graph (the previous
//                                   executable is dropped inside). ns_per_op: per node.
//   capture_N/ours                  capture begin, N launches, capture end (manual time; the reset
//                                   before each capture is not timed). ns_per_op: per node.
//   diamond/ours, diamond/eager     4 independent branches (the origin stream and 3 side streams
//                                   forked and joined by events), each kDiamondDepth sleep_us
//                                   kernels of kSleepUs: one replay (or the eager work), then a
//                                   synchronize. ns_per_op: per replay.
//   one_branch/ours                 one such branch alone, replayed. ns_per_op: per replay.
//
// The diamond needs 4 engines to run its branches side by side (MTIA_SIM_ENGINES, default 4;
// bench/run_graph.sh and the smoke test set it); the engine count is in the JSON context.
// bench/run_graph.sh turns the JSON output into bench/results/graph.md.
//
// A failing runtime call skips the benchmark with the call's message and makes the program exit
// with status 1, so the smoke test notices broken benchmarks.
#include "bench_util.hpp"

#include <benchmark/benchmark.h>
#include <mtia/mtia.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace {

using namespace mtia::bench;

constexpr int kBranches = 4;         // of the diamond: the origin stream and 3 side streams
constexpr int kDiamondDepth = 5;     // sleep_us kernels per branch
constexpr uint64_t kSleepUs = 2000;  // per sleep_us kernel
constexpr mtiaDim3 kOne = {1, 1, 1};

bool noopFunction(benchmark::State& state, mtiaFunction_t* noop) {
    return OK(state, mtiaGetBuiltinFunction(noop, "noop"));
}

mtiaError_t launchNoops(mtiaFunction_t noop, int64_t n, mtiaStream_t s) {
    mtiaError_t st = mtiaSuccess;
    for (int64_t i = 0; i < n && st == mtiaSuccess; ++i)
        st = mtiaLaunchKernel(noop, kOne, kOne, nullptr, 0, s);
    return st;
}

// Captures n empty kernels on s into g (created with flags; a new private pool).
bool captureNoops(benchmark::State& state, Graph& g, unsigned flags, mtiaStream_t s, int64_t n) {
    mtiaFunction_t noop = nullptr;
    if (!noopFunction(state, &noop) || !OK(state, mtiaGraphCreate(&g.h, flags)) ||
        !OK(state,
            mtiaGraphCaptureBegin(g.h, s, mtiaMemPoolId_t{0, 0}, mtiaStreamCaptureModeGlobal)))
        return false;
    return ok(state, launchNoops(noop, n, s), "mtiaLaunchKernel(noop)") &&
           OK(state, mtiaGraphCaptureEnd(g.h));
}

// Reports the graph's shape as counters (nodes; once instantiated, the device queues a replay
// uses).
bool reportShape(benchmark::State& state, const Graph& g) {
    mtiaGraphInfo info = MTIA_GRAPH_INFO_INIT;
    if (!OK(state, mtiaGraphGetInfo(g.h, &info))) return false;
    state.counters["nodes"] = static_cast<double>(info.numNodes);
    if (info.instantiated != 0) state.counters["lanes"] = static_cast<double>(info.numLanes);
    return true;
}

// ---- 1. Straight-line replay of N empty kernels vs N eager launches -----------------------------

void replayOurs(benchmark::State& state) {
    const int64_t n = state.range(0);
    Stream s;
    Graph g;
    if (!OK(state, mtiaStreamCreate(&s.h)) || !captureNoops(state, g, 0, s.h, n) ||
        !reportShape(state, g) || !OK(state, mtiaGraphReplay(g.h, s.h)) ||
        !OK(state, mtiaStreamSynchronize(s.h)))  // warm-up
        return;
    const auto start = Clock::now();
    for (auto _ : state) {
        if (!OK(state, mtiaGraphReplay(g.h, s.h)) || !OK(state, mtiaStreamSynchronize(s.h))) break;
    }
    reportPerOp(state, start, n);
}

void replayEager(benchmark::State& state) {
    const int64_t n = state.range(0);
    Stream s;
    mtiaFunction_t noop = nullptr;
    if (!OK(state, mtiaStreamCreate(&s.h)) || !noopFunction(state, &noop) ||
        !ok(state, launchNoops(noop, n, s.h), "mtiaLaunchKernel(noop)") ||
        !OK(state, mtiaStreamSynchronize(s.h)))
        return;
    const auto start = Clock::now();
    for (auto _ : state) {
        if (!ok(state, launchNoops(noop, n, s.h), "mtiaLaunchKernel(noop)") ||
            !OK(state, mtiaStreamSynchronize(s.h)))
            break;
    }
    reportPerOp(state, start, n);
}

// ---- 2. Instantiate and capture cost ------------------------------------------------------------

void instantiateOurs(benchmark::State& state) {
    const int64_t n = state.range(0);
    Stream s;
    Graph g;
    if (!OK(state, mtiaStreamCreate(&s.h)) || !captureNoops(state, g, mtiaGraphKeepGraph, s.h, n) ||
        !OK(state, mtiaGraphInstantiate(g.h)) || !reportShape(state, g))
        return;
    const auto start = Clock::now();
    for (auto _ : state) {
        if (!OK(state, mtiaGraphInstantiate(g.h))) break;
    }
    reportPerOp(state, start, n);
}

void captureOurs(benchmark::State& state) {
    const int64_t n = state.range(0);
    Stream s;
    Graph g;
    mtiaFunction_t noop = nullptr;
    if (!OK(state, mtiaStreamCreate(&s.h)) || !captureNoops(state, g, mtiaGraphKeepGraph, s.h, n) ||
        !reportShape(state, g) || !noopFunction(state, &noop))
        return;
    double totalNs = 0.0;
    for (auto _ : state) {
        if (!OK(state, mtiaGraphReset(g.h))) break;
        const auto t0 = Clock::now();
        if (!OK(state, mtiaGraphCaptureBegin(g.h, s.h, mtiaMemPoolId_t{0, 0},
                                             mtiaStreamCaptureModeGlobal)) ||
            !ok(state, launchNoops(noop, n, s.h), "mtiaLaunchKernel(noop)") ||
            !OK(state, mtiaGraphCaptureEnd(g.h)))
            break;
        const double ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
        state.SetIterationTime(ns * 1e-9);
        totalNs += ns;
    }
    const auto ops = static_cast<int64_t>(state.iterations()) * n;
    state.SetItemsProcessed(ops);
    state.counters["ns_per_op"] = ops > 0 ? totalNs / static_cast<double>(ops) : 0.0;
}

// ---- 3. Diamond: 4 independent branches of sleeps, forked and joined by events ------------------

struct Branches {
    Stream origin;
    std::array<Stream, kBranches - 1> side;
    Event fork;
    std::array<Event, kBranches - 1> join;
    mtiaFunction_t sleep = nullptr;

    bool create(benchmark::State& state) {
        if (!OK(state, mtiaStreamCreate(&origin.h)) ||
            !OK(state, mtiaEventCreateWithFlags(&fork.h, mtiaEventDisableTiming)) ||
            !OK(state, mtiaGetBuiltinFunction(&sleep, "sleep_us")))
            return false;
        for (int b = 0; b < kBranches - 1; ++b) {
            if (!OK(state, mtiaStreamCreate(&side[b].h)) ||
                !OK(state, mtiaEventCreateWithFlags(&join[b].h, mtiaEventDisableTiming)))
                return false;
        }
        return true;
    }

    // kDiamondDepth sleeps on s.
    bool chain(benchmark::State& state, mtiaStream_t s) {
        uint64_t us = kSleepUs;
        void* args[] = {&us};
        for (int i = 0; i < kDiamondDepth; ++i) {
            if (!OK(state, mtiaLaunchKernel(sleep, kOne, kOne, args, 0, s))) return false;
        }
        return true;
    }

    // Every branch's chain, the side ones forked from and joined back into origin (eager or
    // captured).
    bool diamond(benchmark::State& state) {
        if (!OK(state, mtiaEventRecord(fork.h, origin.h))) return false;
        for (int b = 0; b < kBranches - 1; ++b) {
            if (!OK(state, mtiaStreamWaitEvent(side[b].h, fork.h, mtiaEventWaitDefault)) ||
                !chain(state, side[b].h) || !OK(state, mtiaEventRecord(join[b].h, side[b].h)))
                return false;
        }
        if (!chain(state, origin.h)) return false;
        for (int b = 0; b < kBranches - 1; ++b) {
            if (!OK(state, mtiaStreamWaitEvent(origin.h, join[b].h, mtiaEventWaitDefault)))
                return false;
        }
        return true;
    }
};

void reportReplays(benchmark::State& state, Clock::time_point start, int branches) {
    reportPerOp(state, start, 1);
    state.counters["branches"] = branches;
    state.counters["sleeps_per_branch"] = kDiamondDepth;
    state.counters["sleep_us"] = static_cast<double>(kSleepUs);
}

void branchesReplay(benchmark::State& state, bool all) {
    Branches w;
    Graph g;
    if (!w.create(state) || !OK(state, mtiaGraphCreate(&g.h, 0)) ||
        !OK(state, mtiaGraphCaptureBegin(g.h, w.origin.h, mtiaMemPoolId_t{0, 0},
                                         mtiaStreamCaptureModeGlobal)) ||
        !(all ? w.diamond(state) : w.chain(state, w.origin.h)) ||
        !OK(state, mtiaGraphCaptureEnd(g.h)) || !reportShape(state, g) ||
        !OK(state, mtiaGraphReplay(g.h, w.origin.h)) ||
        !OK(state, mtiaStreamSynchronize(w.origin.h)))  // warm-up
        return;
    const auto start = Clock::now();
    for (auto _ : state) {
        if (!OK(state, mtiaGraphReplay(g.h, w.origin.h)) ||
            !OK(state, mtiaStreamSynchronize(w.origin.h)))
            break;
    }
    reportReplays(state, start, all ? kBranches : 1);
}

void diamondEager(benchmark::State& state) {
    Branches w;
    if (!w.create(state) || !w.diamond(state) || !OK(state, mtiaStreamSynchronize(w.origin.h)))
        return;  // warm-up
    const auto start = Clock::now();
    for (auto _ : state) {
        if (!w.diamond(state) || !OK(state, mtiaStreamSynchronize(w.origin.h))) break;
    }
    reportReplays(state, start, kBranches);
}

void registerAll() {
    using benchmark::RegisterBenchmark;
    for (const int64_t n : {1, 10, 100, 1000}) {
        const std::string workload = "replay_" + std::to_string(n);
        RegisterBenchmark((workload + "/ours").c_str(), replayOurs)->Arg(n)->UseRealTime();
        RegisterBenchmark((workload + "/eager").c_str(), replayEager)->Arg(n)->UseRealTime();
    }
    for (const int64_t n : {100, 1000, 10000}) {
        RegisterBenchmark(("instantiate_" + std::to_string(n) + "/ours").c_str(), instantiateOurs)
            ->Arg(n)
            ->UseRealTime();
    }
    RegisterBenchmark("capture_1000/ours", captureOurs)->Arg(1000)->UseManualTime();
    RegisterBenchmark("diamond/ours", branchesReplay, true)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
    RegisterBenchmark("diamond/eager", diamondEager)->UseRealTime()->Unit(benchmark::kMillisecond);
    RegisterBenchmark("one_branch/ours", branchesReplay, false)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
}

}  // namespace

int main(int argc, char** argv) {
    gProgram = "graph_bench";
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
    // Initialise the runtime before anything is timed.
    mtiaDeviceProp prop = MTIA_DEVICE_PROP_INIT;
    mtiaError_t st = mtiaInit(mtiaInitDefault);
    if (st == mtiaSuccess) st = mtiaGetDeviceProperties(&prop, 0);
    if (st != mtiaSuccess) {
        std::fprintf(stderr, "graph_bench: cannot start the runtime on device 0: %s: %s\n",
                     mtiaGetErrorName(st), mtiaGetLastErrorMessage());
        return 1;
    }
    benchmark::AddCustomContext("engines", std::to_string(prop.multiProcessorCount));
    benchmark::AddCustomContext("device", prop.name);
    registerAll();
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return gFailed.load() ? 1 : 0;
}
