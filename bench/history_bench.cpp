// Memory-history benchmarks, through the public C ABI only, each next to its reference in the same
// run:
//
//   alloc_free/off                  mtiaMalloc + mtiaFree of 4 KiB with recording off (the
//   reference) alloc_free/all_nostacks         the same with mtiaHistoryAll, no stacks (trace
//   entries only) alloc_free/state_cpp            mtiaHistoryState with C++ stacks (contexts of
//   live blocks) alloc_free/all_cpp              mtiaHistoryAll with C++ stacks ns_per_op: per
//   alloc + free pair.
//
//   snapshot_json/100k_10k, snapshot_pickle/100k_10k
//                                   mtiaMemorySnapshot with traces (then mtiaBufferFree) of a
//                                   process holding 10,000 live blocks with C++ stacks from 8 call
//                                   sites and a full ring of 100,000 trace entries. ns_per_op: per
//                                   snapshot.
//   snapshot_json/10k_blocks_fast   the same state without traces (flags 0).
//
// bench/run_history.sh turns the JSON output into bench/results/history.md. A failing runtime call
// skips the benchmark with the call's message and makes the program exit with status 1.
#include "bench_util.hpp"

#include <benchmark/benchmark.h>
#include <mtia/mtia.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace {

using namespace mtia::bench;

constexpr size_t kPairBytes = 4096;
constexpr int kLiveBlocks = 10000;
constexpr size_t kRingEntries = 100000;

void allocFree(benchmark::State& state, mtiaHistoryMode mode, mtiaStackMode stacks) {
    if (!OK(state, mtiaMemoryRecordHistory(mode, stacks, 0))) return;
    void* p = nullptr;
    // Warm: the block is cached, the unwinder has seen these frames.
    if (!OK(state, mtiaMalloc(&p, kPairBytes)) || !OK(state, mtiaFree(p))) return;
    const auto start = Clock::now();
    for (auto _ : state) {
        if (mtiaMalloc(&p, kPairBytes) != mtiaSuccess || mtiaFree(p) != mtiaSuccess) {
            fail(state, std::string("mtiaMalloc/mtiaFree: ") + mtiaGetLastErrorMessage());
            break;
        }
    }
    reportPerOp(state, start, 1);
    OK(state, mtiaMemoryRecordHistory(mtiaHistoryOff, mtiaStacksNone, 0));
}

// Eight distinct call sites, so that the snapshot names several stacks.
template <int Site>
[[gnu::noinline]] mtiaError_t allocateAt(void** p, size_t bytes) {
    const mtiaError_t st = mtiaMalloc(p, bytes + Site);
    asm volatile("" ::: "memory");
    return st;
}
using Allocate = mtiaError_t (*)(void**, size_t);
constexpr Allocate kSites[] = {allocateAt<0>, allocateAt<1>, allocateAt<2>, allocateAt<3>,
                               allocateAt<4>, allocateAt<5>, allocateAt<6>, allocateAt<7>};

// The state the snapshot benchmarks take: 10,000 live blocks, a full ring.
class SnapshotState {
public:
    bool build(benchmark::State& state) {
        if (!OK(state, mtiaMemoryRecordHistory(mtiaHistoryAll, mtiaStacksCpp, kRingEntries)))
            return false;
        blocks_.reserve(kLiveBlocks);
        for (int i = 0; i < kLiveBlocks; ++i) {
            void* p = nullptr;
            if (!OK(state, kSites[i % 8](&p, 512 * static_cast<size_t>(1 + i % 64)))) return false;
            blocks_.push_back(p);
        }
        // Churn until the ring holds 100,000 entries (3 per pair once the cache is warm).
        for (size_t i = 0; i < kRingEntries / 3 + 1; ++i) {
            void* p = nullptr;
            if (!OK(state, kSites[i % 8](&p, 4096)) || !OK(state, mtiaFree(p))) return false;
        }
        return true;
    }
    ~SnapshotState() {
        for (void* p : blocks_) mtiaFree(p);
        mtiaMemoryRecordHistory(mtiaHistoryOff, mtiaStacksNone, 0);
        mtiaEmptyCache();
    }

private:
    std::vector<void*> blocks_;
};

void snapshot(benchmark::State& state, mtiaSnapshotFormat format, unsigned flags) {
    SnapshotState held;
    if (!held.build(state)) return;
    mtiaBuffer buf{};
    // Warm: the first snapshot reads the modules' symbol tables.
    if (!OK(state, mtiaMemorySnapshot(format, flags, &buf))) return;
    mtiaBufferFree(&buf);
    size_t bytes = 0;
    const auto start = Clock::now();
    for (auto _ : state) {
        if (!OK(state, mtiaMemorySnapshot(format, flags, &buf))) break;
        bytes = buf.size;
        mtiaBufferFree(&buf);
    }
    reportPerOp(state, start, 1);
    state.counters["bytes"] = static_cast<double>(bytes);
}

void registerAll() {
    benchmark::RegisterBenchmark("alloc_free/off", allocFree, mtiaHistoryOff, mtiaStacksNone);
    benchmark::RegisterBenchmark("alloc_free/all_nostacks", allocFree, mtiaHistoryAll,
                                 mtiaStacksNone);
    benchmark::RegisterBenchmark("alloc_free/state_cpp", allocFree, mtiaHistoryState,
                                 mtiaStacksCpp);
    benchmark::RegisterBenchmark("alloc_free/all_cpp", allocFree, mtiaHistoryAll, mtiaStacksCpp);
    benchmark::RegisterBenchmark("snapshot_json/100k_10k", snapshot, mtiaSnapshotJson,
                                 mtiaSnapshotIncludeTraces)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("snapshot_pickle/100k_10k", snapshot, mtiaSnapshotPickle,
                                 mtiaSnapshotIncludeTraces)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("snapshot_json/10k_blocks_fast", snapshot, mtiaSnapshotJson, 0u)
        ->Unit(benchmark::kMillisecond);
}

}  // namespace

int main(int argc, char** argv) {
    gProgram = "history_bench";
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
    const mtiaError_t st = mtiaInit(mtiaInitDefault);
    if (st != mtiaSuccess) {
        std::fprintf(stderr, "history_bench: cannot start the runtime: %s: %s\n",
                     mtiaGetErrorName(st), mtiaGetLastErrorMessage());
        return 1;
    }
    registerAll();
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return gFailed.load() ? 1 : 0;
}
