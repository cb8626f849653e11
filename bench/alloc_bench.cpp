// Caching allocator benchmarks: the device allocator behind mtiaMalloc/mtiaFree (public C ABI
// only), next to three host allocators run on the same size sequences in the same process: glibc
// malloc, jemalloc and mimalloc. The references are loaded with dlopen(RTLD_LOCAL) and called
// through dlsym, so neither replaces malloc for the process or for libmtia; main() checks that
// before anything runs.
//
// Names are WORKLOAD/SIDE (ours, ours_async, glibc, jemalloc, mimalloc). Every benchmark measures
// wall time and reports the counter ns_per_op: nanoseconds per malloc+free pair, per thread when
// several threads run. What is timed is the cache hit: each benchmark warms its allocator first,
// and the ours benchmarks report device_allocs, the device allocations made while timing (0 when
// every pair hit the cache). bench/run_alloc.sh turns the JSON output into bench/results/alloc.md.
//
// A failing call skips the benchmark with its message and makes the program exit with status 1; a
// reference library that cannot be loaded is reported and its benchmarks are not registered.
#include "bench_util.hpp"

#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <malloc.h>
#include <mtia/mtia.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace mtia::bench;

// 4 KiB: a LayerNorm weight or its gradient at hidden size 1024 in fp32, the most common kind of
// small tensor; in our small pool, and in every reference's small-size path. 4 MiB: the fp32
// gradient of a 1024 x 1024 weight; in our large pool (> 1 MiB), and above glibc's initial mmap
// threshold.
constexpr size_t kSmallSize = size_t{4} << 10;
constexpr size_t kLargeSize = size_t{4} << 20;
constexpr int kWarmPairs = 16;  // untimed pairs before a fixed-size loop

// Wall time per pair of the loop that ran from start to end. Threads each report their own; the
// counter is their average, so with several threads it is the time per pair of one thread.
void reportPerOp(benchmark::State& state, Clock::time_point start, Clock::time_point end) {
    const double ns = std::chrono::duration<double, std::nano>(end - start).count();
    const auto ops = static_cast<int64_t>(state.iterations());
    state.SetItemsProcessed(ops);
    state.counters["ns_per_op"] = benchmark::Counter(ops > 0 ? ns / static_cast<double>(ops) : 0.0,
                                                     benchmark::Counter::kAvgThreads);
}

// ---- The reference allocators -------------------------------------------------------------------

struct HostAllocator {
    const char* name = "";
    void* (*allocate)(size_t) = nullptr;
    void (*release)(void*) = nullptr;
    std::string library;  // the file the functions were found in
    std::string missing;  // why the allocator is not available; empty when it is
    bool available() const { return missing.empty(); }
};

std::string libraryOf(const void* fn) {
    Dl_info info{};
    if (fn != nullptr && dladdr(fn, &info) != 0 && info.dli_fname != nullptr) return info.dli_fname;
    return "(unknown)";
}

bool contains(const std::string& text, const char* part) {
    return text.find(part) != std::string::npos;
}

// glibc's malloc as the process sees it: the definition that global symbol lookup finds, which is
// also what libmtia's own allocations bind to. It must come from libc, and it must behave as
// glibc's arena allocator (mallinfo2, which only glibc's allocator keeps, counts the block).
HostAllocator glibcAllocator() {
    HostAllocator a;
    a.name = "glibc";
    a.allocate = reinterpret_cast<void* (*)(size_t)>(dlsym(RTLD_DEFAULT, "malloc"));
    a.release = reinterpret_cast<void (*)(void*)>(dlsym(RTLD_DEFAULT, "free"));
    a.library = libraryOf(reinterpret_cast<const void*>(a.allocate));
    if (a.allocate == nullptr || a.release == nullptr) {
        a.missing = "malloc or free not found";
    } else if (!contains(a.library, "libc.so") ||
               !contains(libraryOf(reinterpret_cast<const void*>(a.release)), "libc.so")) {
        a.missing = "the process's malloc is not glibc's: it comes from " + a.library;
    } else {
        // 64 KiB: past glibc's per-thread cache and below its mmap threshold, so it is carved from
        // the arena.
        constexpr size_t kProbe = size_t{64} << 10;
        const size_t before = mallinfo2().uordblks;
        void* p = a.allocate(kProbe);
        const size_t during = mallinfo2().uordblks;
        a.release(p);
        if (p == nullptr || during < before + kProbe)
            a.missing = "malloc does not allocate from glibc's arena";
    }
    return a;
}

// A reference in a shared library of its own, loaded without adding its symbols to the global
// scope. environment names a variable that may give another path to the library.
HostAllocator sharedAllocator(const char* name, const char* environment, const char* soname,
                              const char* allocateSymbol, const char* releaseSymbol) {
    HostAllocator a;
    a.name = name;
    const char* path = std::getenv(environment);
    if (path == nullptr || *path == '\0') path = soname;
    void* handle =
        dlopen(path, RTLD_NOW | RTLD_LOCAL);  // never closed: its memory outlives the benchmarks
    if (handle == nullptr) {
        const char* why = dlerror();
        a.missing =
            std::string("dlopen(") + path + ") failed: " + (why != nullptr ? why : "unknown error");
        return a;
    }
    a.allocate = reinterpret_cast<void* (*)(size_t)>(dlsym(handle, allocateSymbol));
    a.release = reinterpret_cast<void (*)(void*)>(dlsym(handle, releaseSymbol));
    if (a.allocate == nullptr || a.release == nullptr) {
        a.missing = std::string(path) + " has no " + allocateSymbol + " or " + releaseSymbol;
        return a;
    }
    // dlsym on the handle searches the library first, then its dependencies (libc among them): the
    // functions must be the library's own.
    a.library = libraryOf(reinterpret_cast<const void*>(a.allocate));
    if (!contains(a.library, name) ||
        !contains(libraryOf(reinterpret_cast<const void*>(a.release)), name)) {
        a.missing = std::string(allocateSymbol) + " resolved to " + a.library + ", not to " + name;
    }
    return a;
}

// Debian's jemalloc keeps its thread state in initial-exec TLS (2.6 KiB), more than the surplus
// glibc keeps for libraries loaded later (512 bytes by default), so dlopen fails with "cannot
// allocate memory in static TLS block". The surplus is a tunable read at process start: the program
// starts itself again with a larger one. kReexecMarker stops a second attempt.
constexpr const char* kStaticTlsTunable = "glibc.rtld.optional_static_tls=16384";
constexpr const char* kReexecMarker = "MTIA_BENCH_ALLOC_REEXEC";

void reexecWithStaticTlsSurplus(char** argv) {
    if (std::getenv(kReexecMarker) != nullptr) return;
    const char* path = std::getenv("MTIA_BENCH_JEMALLOC");
    void* handle =
        dlopen(path != nullptr && *path != '\0' ? path : "libjemalloc.so.2", RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) return;  // loads as it is (kept loaded: sharedAllocator opens it again)
    const char* why = dlerror();
    if (why == nullptr || !contains(why, "static TLS")) return;
    const char* tunables = std::getenv("GLIBC_TUNABLES");
    std::string value = tunables != nullptr && *tunables != '\0'
                            ? std::string(tunables) + ":" + kStaticTlsTunable
                            : std::string(kStaticTlsTunable);
    setenv("GLIBC_TUNABLES", value.c_str(), 1);
    setenv(kReexecMarker, "1", 1);
    std::fprintf(stderr,
                 "alloc_bench: restarting with GLIBC_TUNABLES=%s so that jemalloc can be loaded\n",
                 value.c_str());
    execv("/proc/self/exe", argv);
    std::fprintf(stderr, "alloc_bench: execv failed; jemalloc is skipped\n");
}

std::string jemallocVersion(const HostAllocator& a) {
    using Mallctl = int (*)(const char*, void*, size_t*, void*, size_t);
    void* handle = dlopen(a.library.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    auto mallctl =
        handle != nullptr ? reinterpret_cast<Mallctl>(dlsym(handle, "mallctl")) : nullptr;
    const char* version = nullptr;
    size_t length = sizeof(version);
    if (mallctl == nullptr || mallctl("version", &version, &length, nullptr, 0) != 0 ||
        version == nullptr)
        return "?";
    return version;
}

std::string mimallocVersion(const HostAllocator& a) {
    void* handle = dlopen(a.library.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    auto miVersion =
        handle != nullptr ? reinterpret_cast<int (*)()>(dlsym(handle, "mi_version")) : nullptr;
    if (miVersion == nullptr) return "?";
    const int v = miVersion();  // e.g. 209 for 2.0.9
    return std::to_string(v / 100) + "." + std::to_string(v / 10 % 10) + "." +
           std::to_string(v % 10);
}

// ---- The size mix
// ------------------------------------------------------------------------------------ What one
// training step of a GPT-style transformer allocates: hidden size h = 1024, FFN 4h, 16 heads, batch
// 4 x sequence 1024 (T = 4096 tokens), vocabulary 50257, bf16 activations, fp32 gradients and
// statistics. Weights are how often each kind is allocated relative to the others; about 62% of the
// allocations are below 1 MiB, 31% between 1 and 10 MiB, 7% larger.
struct TensorKind {
    const char* what;
    uint64_t bytes;
    unsigned weight;
};

constexpr uint64_t kH = 1024, kT = 4096, kVocab = 50257, kHeads = 16, kBatch = 4, kSeq = 1024;
constexpr std::array<TensorKind, 21> kTensorKinds = {{
    {"scalar: loss, grad norm, found_inf, step", 4, 14},
    {"per-block partial sums of a reduction", 4000, 6},
    {"multi-tensor-apply metadata", 2368, 4},
    {"LayerNorm weight, bias or their grads (h fp32)", kH * 4, 10},
    {"attention padding mask (B x S bool)", kBatch* kSeq, 2},
    {"QKV bias (3h fp32)", 3 * kH * 4, 3},
    {"FFN bias (4h fp32)", 4 * kH * 4, 3},
    {"LayerNorm mean or rstd (T fp32)", kT * 4, 8},
    {"labels or position ids (T int64)", kT * 8, 3},
    {"attention logsumexp (B x heads x S fp32)", kBatch* kHeads* kSeq * 4, 4},
    {"one row of logits (vocab bf16)", kVocab * 2, 2},
    {"hidden activation (T x h bf16)", kT* kH * 2, 9},
    {"h x h weight, bf16 copy", kH* kH * 2, 4},
    {"h x h weight gradient (fp32)", kH* kH * 4, 5},
    {"dropout mask (T x h bool)", kT* kH, 5},
    {"QKV weight, bf16 copy (3h x h)", 3 * kH* kH * 2, 3},
    {"FFN weight, bf16 copy (4h x h)", 4 * kH* kH * 2, 3},
    {"QKV activation (T x 3h bf16)", kT * 3 * kH * 2, 2},
    {"FFN activation (T x 4h bf16)", kT * 4 * kH * 2, 3},
    {"FFN weight gradient (4h x h fp32)", 4 * kH* kH * 4, 1},
    {"logits of a 1024-token chunk of the loss (bf16)", 1024 * kVocab * 2, 1},
}};

constexpr size_t kMixLive = 128;  // allocations live at once
constexpr size_t kMixLength =
    8192;  // pairs in the sequence (a power of two: the timed loop wraps around)
constexpr uint64_t kMixSeed = 20261124;
constexpr int kMixWarmPasses = 2;  // untimed passes over the sequence before timing

// One pair of the mix: free the allocation in slot, then allocate bytes into it.
struct MixOp {
    uint32_t slot;
    uint64_t bytes;
};

struct SizeMix {
    std::array<uint64_t, kMixLive> initial{};  // what the slots hold before the first pair
    std::vector<MixOp> ops;
    double meanBytes = 0;
};

// The same sequence for every allocator and on every machine: std::mt19937_64's output is fixed by
// the standard, and the draws below use it directly (the standard's distributions are not
// portable).
SizeMix makeSizeMix() {
    std::mt19937_64 random(kMixSeed);
    uint64_t totalWeight = 0;
    for (const TensorKind& k : kTensorKinds) totalWeight += k.weight;
    auto drawBytes = [&] {
        uint64_t pick = random() % totalWeight;
        for (const TensorKind& k : kTensorKinds) {
            if (pick < k.weight) return k.bytes;
            pick -= k.weight;
        }
        return kTensorKinds.back().bytes;
    };
    static_assert((kMixLive & (kMixLive - 1)) == 0 && (kMixLength & (kMixLength - 1)) == 0);
    SizeMix mix;
    for (uint64_t& bytes : mix.initial) bytes = drawBytes();
    mix.ops.reserve(kMixLength);
    double sum = 0;
    for (size_t i = 0; i < kMixLength; ++i) {
        const auto slot = static_cast<uint32_t>(random() % kMixLive);
        mix.ops.push_back({slot, drawBytes()});
        sum += static_cast<double>(mix.ops.back().bytes);
    }
    mix.meanBytes = sum / kMixLength;
    return mix;
}

const SizeMix& sizeMix() {
    static const SizeMix mix = makeSizeMix();
    return mix;
}

// ---- The loops, shared by every allocator
// ------------------------------------------------------------ allocate(bytes, void*& p) and
// release(void* p) return false after skipping the benchmark.

// beforeTiming runs right before the timed loop, after the warm-up.
template <class Allocate, class Release, class BeforeTiming>
void fixedPairs(benchmark::State& state, size_t bytes, Allocate&& allocate, Release&& release,
                BeforeTiming&& beforeTiming) {
    for (int i = 0; i < kWarmPairs; ++i) {
        void* p = nullptr;
        if (!allocate(bytes, p) || !release(p)) return;
    }
    beforeTiming();
    const auto start = Clock::now();
    for (auto _ : state) {
        void* p = nullptr;
        if (!allocate(bytes, p)) break;
        benchmark::DoNotOptimize(p);
        if (!release(p)) break;
    }
    reportPerOp(state, start, Clock::now());
}

// Fills the slots, runs the whole sequence kMixWarmPasses times untimed (so that the timed pairs
// find the steady state), then times pairs from the start of the sequence, wrapping around.
// beforeTiming and afterTiming run right before and right after the timed loop, untimed.
template <class Allocate, class Release, class BeforeTiming, class AfterTiming>
void mixPairs(benchmark::State& state, Allocate&& allocate, Release&& release,
              BeforeTiming&& beforeTiming, AfterTiming&& afterTiming) {
    const SizeMix& mix = sizeMix();
    std::array<void*, kMixLive> live{};
    auto releaseAll = [&] {
        for (void*& p : live) {
            if (p != nullptr) release(p);
            p = nullptr;
        }
    };
    bool warm = true;
    for (size_t s = 0; s < kMixLive && warm; ++s) warm = allocate(mix.initial[s], live[s]);
    for (size_t i = 0; i < kMixWarmPasses * kMixLength && warm; ++i) {
        const MixOp& op = mix.ops[i & (kMixLength - 1)];
        void*& p = live[op.slot];
        warm = release(p);
        p = nullptr;
        warm = warm && allocate(op.bytes, p);
    }
    if (!warm) {
        releaseAll();
        return;
    }
    beforeTiming();
    size_t i = 0;
    const auto start = Clock::now();
    for (auto _ : state) {
        const MixOp& op = mix.ops[i];
        i = (i + 1) & (kMixLength - 1);
        void*& p = live[op.slot];
        if (!release(p)) break;
        p = nullptr;
        if (!allocate(op.bytes, p)) break;
    }
    const auto end = Clock::now();
    reportPerOp(state, start, end);
    afterTiming();
    releaseAll();
}

// ---- Ours ---------------------------------------------------------------------------------------

int64_t deviceAllocs(int dev) {
    mtiaMemoryStats stats = MTIA_MEMORY_STATS_INIT;
    return mtiaMemoryGetStats(dev, &stats) == mtiaSuccess ? stats.num_device_alloc : -1;
}

auto oursAllocate(benchmark::State& state) {
    return [&state](size_t bytes, void*& p) { return OK(state, mtiaMalloc(&p, bytes)); };
}
auto oursAllocateAsync(benchmark::State& state, mtiaStream_t stream) {
    return [&state, stream](size_t bytes, void*& p) {
        return OK(state, mtiaMallocAsync(&p, bytes, stream));
    };
}
auto oursRelease(benchmark::State& state) {
    return [&state](void* p) { return OK(state, mtiaFree(p)); };
}

// Device allocations made while timing: each one was a cache miss.
void reportDeviceAllocs(benchmark::State& state, int dev, int64_t before) {
    const int64_t after = deviceAllocs(dev);
    state.counters["device_allocs"] =
        before >= 0 && after >= 0 ? static_cast<double>(after - before) : -1.0;
}

void fixedOurs(benchmark::State& state, size_t bytes) {
    int64_t before = -1;
    fixedPairs(state, bytes, oursAllocate(state), oursRelease(state),
               [&] { before = deviceAllocs(0); });
    reportDeviceAllocs(state, 0, before);
}

// mtiaMallocAsync on a stream of its own (the per-call stream lookup instead of the current
// stream).
void fixedOursAsync(benchmark::State& state, size_t bytes) {
    Stream s;
    if (!OK(state, mtiaStreamCreate(&s.h))) return;
    int64_t before = -1;
    fixedPairs(state, bytes, oursAllocateAsync(state, s.h), oursRelease(state),
               [&] { before = deviceAllocs(0); });
    reportDeviceAllocs(state, 0, before);
}

void mixOurs(benchmark::State& state) {
    int64_t before = -1;
    mixPairs(
        state, oursAllocate(state), oursRelease(state), [&] { before = deviceAllocs(0); },
        [&] { reportDeviceAllocs(state, 0, before); });
    // Give the cached segments back: the mix reserves hundreds of MiB of device memory.
    mtiaEmptyCache();
}

// Each of state.threads() threads runs fixed-size pairs on its own device (two devices) or all on
// device 0.
void threadsOurs(benchmark::State& state, bool ownDevice) {
    const int dev = ownDevice ? state.thread_index() : 0;
    if (!OK(state, mtiaSetDevice(dev))) return;
    int64_t before = -1;
    fixedPairs(state, kSmallSize, oursAllocate(state), oursRelease(state),
               [&] { before = deviceAllocs(dev); });
    // The counter is summed over the threads: on one device, one thread counts for both.
    if (ownDevice || state.thread_index() == 0) {
        reportDeviceAllocs(state, dev, before);
    } else {
        state.counters["device_allocs"] = 0;
    }
    mtiaSetDevice(0);  // thread 0 is the main thread
}

// ---- References ---------------------------------------------------------------------------------

auto hostAllocate(benchmark::State& state, const HostAllocator& a) {
    return [&state, &a](size_t bytes, void*& p) {
        p = a.allocate(bytes);
        return p != nullptr || fail(state, std::string(a.name) + " returned NULL for " +
                                               std::to_string(bytes) + " bytes");
    };
}
auto hostRelease(const HostAllocator& a) {
    return [&a](void* p) {
        a.release(p);
        return true;
    };
}

void fixedHost(benchmark::State& state, const HostAllocator* a, size_t bytes) {
    fixedPairs(state, bytes, hostAllocate(state, *a), hostRelease(*a), [] {});
}

void mixHost(benchmark::State& state, const HostAllocator* a) {
    mixPairs(
        state, hostAllocate(state, *a), hostRelease(*a), [] {}, [] {});
}

// ---- Registration -------------------------------------------------------------------------------

void registerAll(const std::vector<HostAllocator>& references, int devices) {
    using benchmark::RegisterBenchmark;
    RegisterBenchmark("fixed_4k/ours", fixedOurs, kSmallSize)->UseRealTime();
    RegisterBenchmark("fixed_4k/ours_async", fixedOursAsync, kSmallSize)->UseRealTime();
    RegisterBenchmark("fixed_4m/ours", fixedOurs, kLargeSize)->UseRealTime();
    RegisterBenchmark("mix/ours", mixOurs)->UseRealTime();
    RegisterBenchmark("two_threads_4k/ours_one_device", threadsOurs, false)
        ->Threads(2)
        ->UseRealTime();
    if (devices >= 2) {
        RegisterBenchmark("two_threads_4k/ours_two_devices", threadsOurs, true)
            ->Threads(2)
            ->UseRealTime();
    } else {
        std::fprintf(stderr,
                     "alloc_bench: one device only: two_threads_4k/ours_two_devices is not run\n");
    }
    for (const HostAllocator& a : references) {
        if (!a.available()) continue;
        const std::string name = a.name;
        RegisterBenchmark(("fixed_4k/" + name).c_str(), fixedHost, &a, kSmallSize)->UseRealTime();
        RegisterBenchmark(("fixed_4m/" + name).c_str(), fixedHost, &a, kLargeSize)->UseRealTime();
        RegisterBenchmark(("mix/" + name).c_str(), mixHost, &a)->UseRealTime();
        RegisterBenchmark(("two_threads_4k/" + name).c_str(), fixedHost, &a, kSmallSize)
            ->Threads(2)
            ->UseRealTime();
    }
}

}  // namespace

int main(int argc, char** argv) {
    gProgram = "alloc_bench";
    reexecWithStaticTlsSurplus(argv);  // before Initialize, which removes the arguments it reads
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
    if (mtiaError_t st = mtiaInit(mtiaInitDefault); st != mtiaSuccess) {
        std::fprintf(stderr, "alloc_bench: mtiaInit failed: %s: %s\n", mtiaGetErrorName(st),
                     mtiaGetLastErrorMessage());
        return 1;
    }
    int devices = 0;
    mtiaGetDeviceCount(&devices);

    // Static: the benchmarks keep pointers to them.
    static std::vector<HostAllocator> references;
    references.push_back(
        sharedAllocator("jemalloc", "MTIA_BENCH_JEMALLOC", "libjemalloc.so.2", "malloc", "free"));
    references.push_back(sharedAllocator("mimalloc", "MTIA_BENCH_MIMALLOC", "libmimalloc.so.2",
                                         "mi_malloc", "mi_free"));
    // After the others are loaded: neither may have taken malloc over.
    references.insert(references.begin(), glibcAllocator());
    if (!references.front().available()) {
        // A sanitizer build replaces malloc on purpose: the comparison means nothing there, but our
        // own benchmarks still run (the smoke test in the ASan and TSan builds).
        const std::string& lib = references.front().library;
        if (contains(lib, "libasan") || contains(lib, "libtsan") || contains(lib, "libubsan")) {
            std::fprintf(
                stderr,
                "alloc_bench: sanitizer build (malloc from %s): the host references are skipped\n",
                lib.c_str());
            for (HostAllocator& a : references)
                if (a.missing.empty()) a.missing = "skipped in a sanitizer build";
        } else {
            std::fprintf(stderr, "alloc_bench: %s\n", references.front().missing.c_str());
            return 1;  // every other figure is relative to an allocator that is not what it claims
                       // to be
        }
    }
    for (const HostAllocator& a : references) {
        std::string description;
        if (a.available()) {
            description = a.library;
            if (std::string(a.name) == "jemalloc")
                description += " (version " + jemallocVersion(a) + ")";
            if (std::string(a.name) == "mimalloc")
                description += " (version " + mimallocVersion(a) + ")";
        } else {
            description = "not available: " + a.missing;
            std::fprintf(stderr, "alloc_bench: %s is skipped: %s\n", a.name, a.missing.c_str());
        }
        benchmark::AddCustomContext(std::string("reference_") + a.name, description);
    }
    if (std::getenv(kReexecMarker) != nullptr)
        benchmark::AddCustomContext("glibc_tunables", std::getenv("GLIBC_TUNABLES"));
    benchmark::AddCustomContext("devices", std::to_string(devices));
    benchmark::AddCustomContext(
        "mix", std::to_string(kMixLive) + " live, " + std::to_string(kMixLength) + " pairs, seed " +
                   std::to_string(kMixSeed) + ", mean " +
                   std::to_string(static_cast<uint64_t>(sizeMix().meanBytes)) + " bytes");

    // Start every device before anything is timed.
    for (int dev = 0; dev < devices; ++dev) {
        void* p = nullptr;
        if (mtiaSetDevice(dev) != mtiaSuccess || mtiaMalloc(&p, kSmallSize) != mtiaSuccess ||
            mtiaFree(p) != mtiaSuccess) {
            std::fprintf(stderr, "alloc_bench: device %d: %s\n", dev, mtiaGetLastErrorMessage());
            return 1;
        }
    }
    mtiaSetDevice(0);

    registerAll(references, devices);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return gFailed.load() ? 1 : 0;
}
