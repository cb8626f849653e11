// Stream and event benchmarks. Every workload runs on the runtime (public C ABI
// only) and, in the same binary, on the reference design of
// bench/baseline/cv_stream.hpp (a worker thread per stream fed through a
// mutex + condition variable queue of std::function).
//
// Names are WORKLOAD/ours and WORKLOAD/baseline. Every benchmark measures wall
// time and reports the counter ns_per_op: nanoseconds per operation as the
// workload defines it (one launch, one record + query pair, one round trip,
// one host function). bench/run_streams.sh turns the JSON output into
// bench/results/streams.md.
//
// A failing runtime call skips the benchmark with the call's message and makes
// the program exit with status 1, so the smoke test notices broken benchmarks.
//
// driver_replay_N/{list,single} go one level down, to the driver ABI: N empty
// kernels as one command list (driver ABI 1.2, what a graph replay submits)
// next to N single submissions, on the simulated driver loaded as a module.
#include "baseline/cv_stream.hpp"
#include "bench_util.hpp"

#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <mtia/mtia.h>
#include <mtia/mtia_driver.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using mtia::bench::baseline::CvEvent;
using mtia::bench::baseline::CvStream;
using namespace mtia::bench;

// Empty kernels per synchronize. Below the launch queue's depth (MTIA_SIM_QUEUE_DEPTH, default
// 1024): diag_enqueue_blocked queues a whole batch behind a host function that holds the engine,
// and a launch past the depth would wait for that host function, which waits for the batch.
constexpr int64_t kLaunchBatch = 1000;
constexpr int64_t kPingPongBatch = 100;   // round trips per synchronize
constexpr int64_t kColdIterations = 200;  // cold host-function launches per run (each sleeps first)
constexpr auto kColdIdle =
    std::chrono::milliseconds(1);  // long enough for every runtime thread to sleep
constexpr mtiaDim3 kOne = {1, 1, 1};

int64_t nowNs() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
        .count();
}

// Manual-time benchmarks: the per-operation time is the mean of what SetIterationTime was given.
void reportManual(benchmark::State& state, double totalNs) {
    const auto iterations = static_cast<int64_t>(state.iterations());
    state.SetItemsProcessed(iterations);
    state.counters["ns_per_op"] = iterations > 0 ? totalNs / static_cast<double>(iterations) : 0.0;
}

// ---- 1. Sustained enqueue-and-complete of empty kernels on one stream ---------------------------

void launchNoopOurs(benchmark::State& state) {
    const int64_t batch = state.range(0);
    Stream s;
    mtiaFunction_t noop = nullptr;
    if (!OK(state, mtiaStreamCreate(&s.h)) || !OK(state, mtiaGetBuiltinFunction(&noop, "noop")))
        return;
    const auto start = Clock::now();
    for (auto _ : state) {
        mtiaError_t st = mtiaSuccess;
        for (int64_t i = 0; i < batch && st == mtiaSuccess; ++i)
            st = mtiaLaunchKernel(noop, kOne, kOne, nullptr, 0, s.h);
        if (!ok(state, st, "mtiaLaunchKernel(noop)") || !OK(state, mtiaStreamSynchronize(s.h)))
            break;
    }
    reportPerOp(state, start, batch);
}

void launchNoopBaseline(benchmark::State& state) {
    const int64_t batch = state.range(0);
    CvStream s;
    const auto start = Clock::now();
    for (auto _ : state) {
        for (int64_t i = 0; i < batch; ++i) s.enqueue([] {});
        s.synchronize();
    }
    reportPerOp(state, start, batch);
}

// ---- 2. Event record + query on an idle stream
// --------------------------------------------------- One operation is one record followed by one
// query. ready_fraction: how often the query already found the record complete.

void eventRecordQueryOurs(benchmark::State& state, unsigned flags) {
    Stream s;
    Event e;
    if (!OK(state, mtiaStreamCreate(&s.h)) || !OK(state, mtiaEventCreateWithFlags(&e.h, flags)) ||
        !OK(state, mtiaStreamSynchronize(s.h)))
        return;
    int64_t ready = 0;
    const auto start = Clock::now();
    for (auto _ : state) {
        if (!OK(state, mtiaEventRecord(e.h, s.h))) break;
        const mtiaError_t q = mtiaEventQuery(e.h);
        if (q == mtiaSuccess) {
            ++ready;
        } else if (q != mtiaErrorNotReady) {
            ok(state, q, "mtiaEventQuery");
            break;
        }
    }
    reportPerOp(state, start, 1);
    state.counters["ready_fraction"] =
        state.iterations() > 0
            ? static_cast<double>(ready) / static_cast<double>(state.iterations())
            : 0.0;
}

void eventRecordQueryBaseline(benchmark::State& state, bool timing) {
    CvStream s;
    CvEvent e(timing);
    int64_t ready = 0;
    const auto start = Clock::now();
    for (auto _ : state) {
        e.record(s);
        if (e.query()) ++ready;
    }
    reportPerOp(state, start, 1);
    state.counters["ready_fraction"] =
        state.iterations() > 0
            ? static_cast<double>(ready) / static_cast<double>(state.iterations())
            : 0.0;
    s.synchronize();
}

// ---- 3. Cross-stream ping-pong
// ------------------------------------------------------------------- One round trip: A records eA,
// B waits for eA, B records eB, A waits for eB. A batch of round trips, then the host synchronizes
// A (which has waited for B's last record).

void pingPongOurs(benchmark::State& state) {
    const int64_t rounds = state.range(0);
    Stream a, b;
    Event ea, eb;
    if (!OK(state, mtiaStreamCreate(&a.h)) || !OK(state, mtiaStreamCreate(&b.h)) ||
        !OK(state, mtiaEventCreateWithFlags(&ea.h, mtiaEventDisableTiming)) ||
        !OK(state, mtiaEventCreateWithFlags(&eb.h, mtiaEventDisableTiming)))
        return;
    const auto start = Clock::now();
    for (auto _ : state) {
        mtiaError_t st = mtiaSuccess;
        for (int64_t i = 0; i < rounds && st == mtiaSuccess; ++i) {
            st = mtiaEventRecord(ea.h, a.h);
            if (st == mtiaSuccess) st = mtiaStreamWaitEvent(b.h, ea.h, mtiaEventWaitDefault);
            if (st == mtiaSuccess) st = mtiaEventRecord(eb.h, b.h);
            if (st == mtiaSuccess) st = mtiaStreamWaitEvent(a.h, eb.h, mtiaEventWaitDefault);
        }
        if (!ok(state, st, "ping-pong record/wait") || !OK(state, mtiaStreamSynchronize(a.h)))
            break;
    }
    reportPerOp(state, start, rounds);
}

void pingPongBaseline(benchmark::State& state) {
    const int64_t rounds = state.range(0);
    CvStream a, b;
    CvEvent ea(false), eb(false);
    const auto start = Clock::now();
    for (auto _ : state) {
        for (int64_t i = 0; i < rounds; ++i) {
            ea.record(a);
            ea.streamWait(b);
            eb.record(b);
            eb.streamWait(a);
        }
        a.synchronize();
    }
    reportPerOp(state, start, rounds);
    b.synchronize();
}

// ---- 4. Host functions --------------------------------------------------------------------------

void countCall(void* counter) {
    static_cast<std::atomic<int64_t>*>(counter)->fetch_add(1, std::memory_order_relaxed);
}

void stampCall(void* stamp) {
    static_cast<std::atomic<int64_t>*>(stamp)->store(nowNs(), std::memory_order_release);
}

// 4a. Enqueue one host function on an idle stream and synchronize.
void hostFuncSyncOurs(benchmark::State& state) {
    Stream s;
    std::atomic<int64_t> calls{0};
    if (!OK(state, mtiaStreamCreate(&s.h)) || !OK(state, mtiaStreamSynchronize(s.h))) return;
    const auto start = Clock::now();
    for (auto _ : state) {
        if (!OK(state, mtiaLaunchHostFunc(s.h, countCall, &calls)) ||
            !OK(state, mtiaStreamSynchronize(s.h)))
            break;
    }
    reportPerOp(state, start, 1);
}

void hostFuncSyncBaseline(benchmark::State& state) {
    CvStream s;
    std::atomic<int64_t> calls{0};
    const auto start = Clock::now();
    for (auto _ : state) {
        launchHostFunc(s, countCall, &calls);
        s.synchronize();
    }
    reportPerOp(state, start, 1);
}

// 4b. Latency from the enqueue on an idle stream until the host function runs (manual time): the
// function stamps the time it ran, the host synchronizes (so that it does not compete for a CPU by
// polling a flag itself). Hot: the next enqueue follows the previous completion at once. Cold: the
// process sleeps kColdIdle first, so every runtime thread has gone to sleep.
template <class Launch, class Sync>
void hostFuncLatency(benchmark::State& state, bool cold, Launch&& launch, Sync&& sync) {
    std::atomic<int64_t> stamp{0};
    double totalNs = 0;
    for (auto _ : state) {
        if (cold) std::this_thread::sleep_for(kColdIdle);
        stamp.store(0, std::memory_order_relaxed);
        const int64_t t0 = nowNs();
        if (!launch(stampCall, &stamp) || !sync()) break;
        const double ns = static_cast<double>(stamp.load(std::memory_order_acquire) - t0);
        totalNs += ns;
        state.SetIterationTime(ns * 1e-9);
    }
    reportManual(state, totalNs);
}

void hostFuncLatencyOurs(benchmark::State& state, bool cold) {
    Stream s;
    if (!OK(state, mtiaStreamCreate(&s.h)) || !OK(state, mtiaStreamSynchronize(s.h))) return;
    hostFuncLatency(
        state, cold,
        [&](void (*fn)(void*), void* data) { return OK(state, mtiaLaunchHostFunc(s.h, fn, data)); },
        [&] { return OK(state, mtiaStreamSynchronize(s.h)); });
}

void hostFuncLatencyBaseline(benchmark::State& state, bool cold) {
    CvStream s;
    hostFuncLatency(
        state, cold,
        [&](void (*fn)(void*), void* data) {
            launchHostFunc(s, fn, data);
            return true;
        },
        [&] {
            s.synchronize();
            return true;
        });
}

// ---- Diagnostics: where the time of the workloads above goes ------------------------------------

void gateCall(void* open) {
    static_cast<std::atomic<bool>*>(open)->wait(false);
}

// The two halves of a launch, apart (manual time): the stream's engine is held in a host function
// (a gate) until the whole batch is queued, so nothing reads the queue meanwhile. Phase::Enqueue
// times the enqueue loop (the host side alone); Phase::Drain times from opening the gate until
// synchronize returns (the device side alone: running the queued batch, plus one wake-up of the
// synchronizing thread).
enum class Phase { Enqueue, Drain };

template <class Launch, class Gate, class Sync>
void launchHalf(benchmark::State& state, Phase phase, Launch&& launchBatch, Gate&& gate,
                Sync&& sync) {
    std::atomic<bool> open{false};
    double totalNs = 0;
    for (auto _ : state) {
        open.store(false);
        if (!gate(&open)) break;
        const auto t0 = Clock::now();
        const bool launched = launchBatch();
        const auto t1 = Clock::now();
        open.store(true);
        open.notify_one();
        if (!launched || !sync()) break;
        const auto t2 = Clock::now();
        const double ns = phase == Phase::Enqueue
                              ? std::chrono::duration<double, std::nano>(t1 - t0).count()
                              : std::chrono::duration<double, std::nano>(t2 - t1).count();
        totalNs += ns;
        state.SetIterationTime(ns * 1e-9);
    }
    const auto iterations = static_cast<int64_t>(state.iterations());
    state.SetItemsProcessed(iterations * kLaunchBatch);
    state.counters["ns_per_op"] =
        iterations > 0 ? totalNs / static_cast<double>(iterations * kLaunchBatch) : 0.0;
}

void diagLaunchHalfOurs(benchmark::State& state, Phase phase) {
    Stream s;
    mtiaFunction_t noop = nullptr;
    if (!OK(state, mtiaStreamCreate(&s.h)) || !OK(state, mtiaGetBuiltinFunction(&noop, "noop")))
        return;
    launchHalf(
        state, phase,
        [&] {
            mtiaError_t st = mtiaSuccess;
            for (int64_t i = 0; i < kLaunchBatch && st == mtiaSuccess; ++i)
                st = mtiaLaunchKernel(noop, kOne, kOne, nullptr, 0, s.h);
            return ok(state, st, "mtiaLaunchKernel(noop)");
        },
        [&](std::atomic<bool>* open) { return OK(state, mtiaLaunchHostFunc(s.h, gateCall, open)); },
        [&] { return OK(state, mtiaStreamSynchronize(s.h)); });
}

void diagLaunchHalfBaseline(benchmark::State& state, Phase phase) {
    CvStream s;
    launchHalf(
        state, phase,
        [&] {
            for (int64_t i = 0; i < kLaunchBatch; ++i) s.enqueue([] {});
            return true;
        },
        [&](std::atomic<bool>* open) {
            launchHostFunc(s, gateCall, open);
            return true;
        },
        [&] {
            s.synchronize();
            return true;
        });
}

// The cost of one call that only looks: the API entry, the handle lookup, the device's fault status
// and the driver's completion counter.
void diagStreamQueryOurs(benchmark::State& state) {
    Stream s;
    if (!OK(state, mtiaStreamCreate(&s.h)) || !OK(state, mtiaStreamSynchronize(s.h))) return;
    const auto start = Clock::now();
    for (auto _ : state) {
        if (!OK(state, mtiaStreamQuery(s.h))) break;
    }
    reportPerOp(state, start, 1);
}

void diagStreamQueryBaseline(benchmark::State& state) {
    CvStream s;
    const auto start = Clock::now();
    for (auto _ : state) benchmark::DoNotOptimize(s.query());
    reportPerOp(state, start, 1);
}

void diagEventQueryOurs(benchmark::State& state) {
    Stream s;
    Event e;
    if (!OK(state, mtiaStreamCreate(&s.h)) ||
        !OK(state, mtiaEventCreateWithFlags(&e.h, mtiaEventDisableTiming)) ||
        !OK(state, mtiaEventRecord(e.h, s.h)) || !OK(state, mtiaEventSynchronize(e.h)))
        return;
    const auto start = Clock::now();
    for (auto _ : state) {
        if (!OK(state, mtiaEventQuery(e.h))) break;
    }
    reportPerOp(state, start, 1);
}

void diagEventQueryBaseline(benchmark::State& state) {
    CvStream s;
    CvEvent e(false);
    e.record(s);
    e.synchronize();
    const auto start = Clock::now();
    for (auto _ : state) benchmark::DoNotOptimize(e.query());
    reportPerOp(state, start, 1);
}

// ---- 5. Driver ABI 1.2: a replay of N empty kernels as one command list vs N single submits
// ------- Through the public driver ABI on the simulated driver loaded as a module
// (mtia_driver_sim.so, an instance of its own next to the runtime's built-in one;
// MTIA_BENCH_SIM_DRIVER overrides the path). One iteration: submit, then wait for the last command:
// spinning first (MTIA_DRV_WAIT_SPIN, what a stream synchronize does) or asleep at once
// (driver_replay_sleep_N: MTIA_DRV_WAIT_SLEEP, which leaves the CPU to the engine; on a machine
// with few free CPUs a spinning waiter can delay the engine more than the whole replay takes).
// ns_per_op: per kernel.

#ifndef MTIA_BENCH_SIM_DRIVER
#define MTIA_BENCH_SIM_DRIVER "mtia_driver_sim.so"
#endif

struct SimDriver {
    mtiaDriverOps ops{};
    std::string error;  // why the driver cannot be used; empty when it can
};

const SimDriver& simDriver() {
    static const SimDriver driver = [] {
        SimDriver d;
        const char* path = std::getenv("MTIA_BENCH_SIM_DRIVER");
        if (path == nullptr || *path == '\0') path = MTIA_BENCH_SIM_DRIVER;
        void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL |
                                        RTLD_NODELETE);  // its engines live for the process
        void* sym = handle != nullptr ? dlsym(handle, MTIA_DRIVER_GET_OPS_SYMBOL) : nullptr;
        if (sym == nullptr) {
            const char* why = dlerror();
            d.error = std::string("cannot load ") + path + ": " +
                      (why != nullptr ? why : "no " MTIA_DRIVER_GET_OPS_SYMBOL);
            return d;
        }
        mtiaDriverGetOpsFn getOps = nullptr;
        std::memcpy(&getOps, &sym, sizeof(getOps));
        d.ops.structSize = sizeof(d.ops);
        if (getOps(MTIA_DRIVER_API_VERSION, &d.ops) != mtiaSuccess ||
            d.ops.init(0) != mtiaSuccess) {
            d.error = std::string(path) + " refused driver ABI 1.2 or failed to initialise";
        } else if (d.ops.structSize < sizeof(d.ops) || d.ops.commandListCreate == nullptr) {
            d.error = std::string(path) + " has no command lists";
        }
        return d;
    }();
    return driver;
}

bool driverOk(benchmark::State& state, const mtiaDriverOps& d, mtiaError_t status,
              const char* call) {
    if (status == mtiaSuccess) return true;
    gFailed.store(true);
    const std::string message =
        std::string(call) + " returned " + mtiaGetErrorName(status) + ": " + d.lastErrorMessage();
    std::fprintf(stderr, "streams_bench: %s\n", message.c_str());
    state.SkipWithError(message.c_str());
    return false;
}
#define DRV_OK(state, d, call) driverOk((state), (d), (d).call, #call)

void driverReplay(benchmark::State& state, bool asList, uint32_t waitFlags) {
    const int64_t n = state.range(0);
    const SimDriver& sim = simDriver();
    if (!sim.error.empty()) {
        gFailed.store(true);
        std::fprintf(stderr, "streams_bench: %s\n", sim.error.c_str());
        state.SkipWithError(sim.error.c_str());
        return;
    }
    const mtiaDriverOps& d = sim.ops;
    mtiaDrvQueue q = nullptr;
    mtiaDrvKernel noop = nullptr;
    if (!DRV_OK(state, d, queueCreate(0, 0, 0, &q))) return;
    mtiaDrvCommandList list = nullptr;
    mtiaDrvCommand kernel{};
    kernel.type = mtiaDrvCmdKernel;
    kernel.u.kernel.grid = kOne;
    kernel.u.kernel.block = kOne;
    mtiaDrvCommand run{};
    run.type = mtiaDrvCmdList;
    if (DRV_OK(state, d, moduleGetKernel(nullptr, "noop", &noop))) {
        kernel.u.kernel.kernel = noop;
        const std::vector<mtiaDrvCommand> cmds(static_cast<size_t>(n), kernel);
        if (!asList || DRV_OK(state, d, commandListCreate(0, cmds.data(), cmds.size(), &list))) {
            run.u.list.list = list;
            const auto start = Clock::now();
            for (auto _ : state) {
                uint64_t seq = 0;
                mtiaError_t st = mtiaSuccess;
                if (asList) {
                    st = d.queueSubmit(q, &run, &seq);
                } else {
                    for (int64_t i = 0; i < n && st == mtiaSuccess; ++i)
                        st = d.queueSubmit(q, &kernel, &seq);
                }
                if (!driverOk(state, d, st, "queueSubmit") ||
                    !DRV_OK(state, d, queueWait(q, seq, waitFlags)))
                    break;
            }
            reportPerOp(state, start, n);
        }
    }
    if (list != nullptr) d.commandListDestroy(list);
    d.queueDestroy(q);
}

void registerAll() {
    using benchmark::RegisterBenchmark;
    RegisterBenchmark("launch_noop/ours", launchNoopOurs)->Arg(kLaunchBatch)->UseRealTime();
    RegisterBenchmark("launch_noop/baseline", launchNoopBaseline)->Arg(kLaunchBatch)->UseRealTime();
    RegisterBenchmark("launch_sync_noop/ours", launchNoopOurs)->Arg(1)->UseRealTime();
    RegisterBenchmark("launch_sync_noop/baseline", launchNoopBaseline)->Arg(1)->UseRealTime();

    RegisterBenchmark("event_record_query_untimed/ours", eventRecordQueryOurs,
                      mtiaEventDisableTiming)
        ->UseRealTime();
    RegisterBenchmark("event_record_query_untimed/baseline", eventRecordQueryBaseline, false)
        ->UseRealTime();
    RegisterBenchmark("event_record_query_timed/ours", eventRecordQueryOurs, mtiaEventDefault)
        ->UseRealTime();
    RegisterBenchmark("event_record_query_timed/baseline", eventRecordQueryBaseline, true)
        ->UseRealTime();

    RegisterBenchmark("pingpong/ours", pingPongOurs)->Arg(kPingPongBatch)->UseRealTime();
    RegisterBenchmark("pingpong/baseline", pingPongBaseline)->Arg(kPingPongBatch)->UseRealTime();

    for (const uint32_t wait : {MTIA_DRV_WAIT_SPIN, MTIA_DRV_WAIT_SLEEP}) {
        for (const int64_t n : {1, 10, 100, 1000}) {
            const std::string workload =
                std::string(wait == MTIA_DRV_WAIT_SPIN ? "driver_replay_"
                                                       : "driver_replay_sleep_") +
                std::to_string(n);
            RegisterBenchmark((workload + "/list").c_str(), driverReplay, true, wait)
                ->Arg(n)
                ->UseRealTime();
            RegisterBenchmark((workload + "/single").c_str(), driverReplay, false, wait)
                ->Arg(n)
                ->UseRealTime();
        }
    }

    RegisterBenchmark("hostfunc_sync/ours", hostFuncSyncOurs)->UseRealTime();
    RegisterBenchmark("hostfunc_sync/baseline", hostFuncSyncBaseline)->UseRealTime();
    RegisterBenchmark("hostfunc_latency_hot/ours", hostFuncLatencyOurs, false)->UseManualTime();
    RegisterBenchmark("hostfunc_latency_hot/baseline", hostFuncLatencyBaseline, false)
        ->UseManualTime();
    RegisterBenchmark("hostfunc_latency_cold/ours", hostFuncLatencyOurs, true)
        ->UseManualTime()
        ->Iterations(kColdIterations);
    RegisterBenchmark("hostfunc_latency_cold/baseline", hostFuncLatencyBaseline, true)
        ->UseManualTime()
        ->Iterations(kColdIterations);

    RegisterBenchmark("diag_enqueue_blocked/ours", diagLaunchHalfOurs, Phase::Enqueue)
        ->UseManualTime();
    RegisterBenchmark("diag_enqueue_blocked/baseline", diagLaunchHalfBaseline, Phase::Enqueue)
        ->UseManualTime();
    RegisterBenchmark("diag_drain/ours", diagLaunchHalfOurs, Phase::Drain)->UseManualTime();
    RegisterBenchmark("diag_drain/baseline", diagLaunchHalfBaseline, Phase::Drain)->UseManualTime();
    RegisterBenchmark("diag_stream_query/ours", diagStreamQueryOurs)->UseRealTime();
    RegisterBenchmark("diag_stream_query/baseline", diagStreamQueryBaseline)->UseRealTime();
    RegisterBenchmark("diag_event_query/ours", diagEventQueryOurs)->UseRealTime();
    RegisterBenchmark("diag_event_query/baseline", diagEventQueryBaseline)->UseRealTime();
}

}  // namespace

int main(int argc, char** argv) {
    gProgram = "streams_bench";
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
    // Initialise the runtime before anything is timed.
    if (mtiaError_t st = mtiaInit(mtiaInitDefault); st != mtiaSuccess) {
        std::fprintf(stderr, "streams_bench: mtiaInit failed: %s: %s\n", mtiaGetErrorName(st),
                     mtiaGetLastErrorMessage());
        return 1;
    }
    registerAll();
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return gFailed.load() ? 1 : 0;
}
