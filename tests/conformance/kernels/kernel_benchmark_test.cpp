// mtiaBenchmarkKernel on the built-in sleep kernel: the times it reports, the cache flush it
// writes, its bad input, capture and a sticky fault during the runs. Each suite runs in its own
// process with its own environment (CMakeLists.txt / meson.build): MTIA_SIM_L2_CACHE keeps the
// flush buffer small.
#include <gtest/gtest.h>
#include <mtia/mtia.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <thread>
#include <vector>

#include "common/kernels.hpp"
#include "common/memory.hpp"
#include "common/scopes.hpp"
#include "common/status.hpp"

namespace {

using mtia_test::kOne;

constexpr uint64_t kSleepUs = 2000;

struct SleepLaunch {
    mtiaFunction_t fn = mtia_test::builtin("sleep_us");
    uint64_t us = kSleepUs;
    void* args[1] = {&us};
};

mtiaBenchmarkOptions options(uint32_t warmup, uint32_t repetitions, uint32_t flush = 0) {
    mtiaBenchmarkOptions o = MTIA_BENCHMARK_OPTIONS_INIT;
    o.warmup = warmup;
    o.repetitions = repetitions;
    o.flushCache = flush;
    return o;
}

uint64_t l2CacheSize() {
    mtiaDeviceProp p = MTIA_DEVICE_PROP_INIT;
    EXPECT_OK(mtiaGetDeviceProperties(&p, 0));
    return p.l2CacheSize;
}

// Every repetition is timed around one sleep kernel: at least its sleep, never NaN.
TEST(Benchmark, TimesEachRepetitionOfASleepKernel) {
    mtia_test::Stream s;
    ASSERT_OK(s.status());
    SleepLaunch k;
    const mtiaBenchmarkOptions o = options(1, 5);
    std::vector<float> times(5, -1.0f);
    ASSERT_OK(mtiaBenchmarkKernel(k.fn, kOne, kOne, k.args, 0, s, &o, times.data()));
    for (float t : times) {
        EXPECT_FALSE(std::isnan(t));
        EXPECT_GE(t, kSleepUs / 1000.0 * 0.999) << "a repetition shorter than its kernel's sleep";
    }
    // Nothing is left queued: the call synchronized its stream.
    EXPECT_OK(mtiaStreamQuery(s));
}

// A struct from an older caller (no flushCache field) is read as "no flush".
TEST(Benchmark, OlderOptionsStructWithoutFlushField) {
    SleepLaunch k;
    k.us = 10;
    mtiaBenchmarkOptions o = options(0, 2, 1);
    o.structSize = 3 * sizeof(uint32_t);
    float times[2] = {-1, -1};
    const int64_t before = mtia_test::memStats().num_device_alloc;
    ASSERT_OK(mtiaBenchmarkKernel(k.fn, kOne, kOne, k.args, 0, nullptr, &o, times));
    EXPECT_GE(times[1], 0.0f);
    EXPECT_EQ(mtia_test::memStats().num_device_alloc, before) << "flushed although not asked";
}

// The flush buffer is l2CacheSize bytes from the caching allocator on the benchmark's stream,
// written before each repetition (the last write holds repetitions - 1), freed afterwards and
// reused by the next call.
TEST(Benchmark, FlushWritesACachedBufferOfTheCacheSize) {
    const uint64_t cache = l2CacheSize();
    ASSERT_EQ(cache, 1u << 20) << "the test entry sets MTIA_SIM_L2_CACHE=1MiB";
    mtia_test::Stream s;
    ASSERT_OK(s.status());
    SleepLaunch k;
    k.us = 10;
    const mtiaBenchmarkOptions o = options(0, 3, 1);
    float times[3];
    ASSERT_OK(mtiaBenchmarkKernel(k.fn, kOne, kOne, k.args, 0, s, &o, times));
    const mtiaMemoryStats after1 = mtia_test::memStats();
    EXPECT_EQ(after1.allocated_bytes[mtiaStatAll].current, 0) << "the flush buffer leaked";
    EXPECT_GE(after1.allocated_bytes[mtiaStatAll].peak, static_cast<int64_t>(cache));
    ASSERT_OK(mtiaBenchmarkKernel(k.fn, kOne, kOne, k.args, 0, s, &o, times));
    EXPECT_EQ(mtia_test::memStats().num_device_alloc, after1.num_device_alloc)
        << "the second call did not reuse the cached flush buffer";
    // The cached block comes back to an allocation of the same size on the same stream, holding
    // what the last flush wrote.
    void* p = mtia_test::mallocOn(cache, s);
    ASSERT_NE(p, nullptr);
    std::vector<unsigned char> host(cache);
    ASSERT_OK(mtiaMemcpy(host.data(), p, cache, mtiaMemcpyDeviceToHost));
    size_t wrong = 0;
    for (unsigned char b : host) wrong += b != 2;
    EXPECT_EQ(wrong, 0u) << "the flush buffer was not written";
    mtia_test::freeOk(p);
}

TEST(Benchmark, BadInputNamesTheArgument) {
    SleepLaunch k;
    k.us = 1;
    mtiaBenchmarkOptions o = options(0, 2);
    float times[2] = {-1, -1};
    EXPECT_FAILS_NAMING(mtiaErrorInvalidValue,
                        mtiaBenchmarkKernel(k.fn, kOne, kOne, k.args, 0, nullptr, nullptr, times),
                        "options");
    EXPECT_FAILS_NAMING(mtiaErrorInvalidValue,
                        mtiaBenchmarkKernel(k.fn, kOne, kOne, k.args, 0, nullptr, &o, nullptr),
                        "timesMs");
    mtiaBenchmarkOptions small = o;
    small.structSize = 8;
    EXPECT_FAILS_NAMING(mtiaErrorInvalidValue,
                        mtiaBenchmarkKernel(k.fn, kOne, kOne, k.args, 0, nullptr, &small, times),
                        "structSize");
    mtiaBenchmarkOptions none = options(0, 0);
    EXPECT_FAILS_NAMING(mtiaErrorInvalidValue,
                        mtiaBenchmarkKernel(k.fn, kOne, kOne, k.args, 0, nullptr, &none, times),
                        "repetitions");
    EXPECT_FAILS_NAMING(mtiaErrorInvalidHandle,
                        mtiaBenchmarkKernel(nullptr, kOne, kOne, k.args, 0, nullptr, &o, times),
                        "f");
    EXPECT_FAILS_NAMING(mtiaErrorInvalidHandle,
                        mtiaBenchmarkKernel(k.fn, kOne, kOne, k.args, 0,
                                            reinterpret_cast<mtiaStream_t>(&o), &o, times),
                        "stream");
    // The launch's own checks, as mtiaLaunchKernel makes them.
    EXPECT_FAILS_NAMING(
        mtiaErrorInvalidValue,
        mtiaBenchmarkKernel(k.fn, mtiaDim3{0, 1, 1}, kOne, k.args, 0, nullptr, &o, times), "grid");
    EXPECT_FAILS_NAMING(mtiaErrorInvalidValue,
                        mtiaBenchmarkKernel(k.fn, kOne, kOne, nullptr, 0, nullptr, &o, times),
                        "args");
    EXPECT_EQ(times[0], -1.0f) << "timesMs written by a failed call";
}

// It synchronizes its stream, so a capturing stream refuses it as it refuses
// mtiaStreamSynchronize, and the capture is invalidated.
TEST(Benchmark, RefusedDuringCapture) {
    mtia_test::Stream s;
    ASSERT_OK(s.status());
    SleepLaunch k;
    k.us = 1;
    const mtiaBenchmarkOptions o = options(0, 1);
    float t = -1;
    ASSERT_OK(mtiaStreamBeginCapture(s, mtiaStreamCaptureModeGlobal));
    EXPECT_FAILS_SAYING(mtiaErrorStreamCaptureUnsupported,
                        mtiaBenchmarkKernel(k.fn, kOne, kOne, k.args, 0, s, &o, &t),
                        "mtiaBenchmarkKernel|capturing");
    mtiaGraph_t g = nullptr;
    EXPECT_STATUS(mtiaErrorStreamCaptureInvalidated, mtiaStreamEndCapture(s, &g));
    EXPECT_OK(mtiaGraphDestroy(g));
    EXPECT_EQ(t, -1.0f);
}

// Concurrent calls on different streams each get their own events and times.
TEST(Benchmark, ThreadSafe) {
    std::vector<std::thread> threads;
    std::vector<mtiaError_t> status(3, mtiaErrorUnknown);
    std::vector<float> first(3, -1.0f);
    for (int t = 0; t < 3; ++t) {
        threads.emplace_back([&, t] {
            mtia_test::Stream s;
            SleepLaunch k;
            k.us = 200;
            const mtiaBenchmarkOptions o = options(1, 4, t == 0);
            float times[4];
            status[t] = mtiaBenchmarkKernel(k.fn, kOne, kOne, k.args, 0, s, &o, times);
            first[t] = times[0];
        });
    }
    for (std::thread& th : threads) th.join();
    for (int t = 0; t < 3; ++t) {
        EXPECT_OK(status[t]);
        EXPECT_GE(first[t], 0.2f * 0.999);
    }
}

// MTIA_SIM_FAULTS=kernel=sleep_us@3: the third launch (a timed one) faults. The fault is returned,
// nothing is written, and the flush buffer went back to the allocator.
TEST(BenchmarkFault, StickyFaultDuringTheRunsIsReturned) {
    SleepLaunch k;
    k.us = 10;
    const mtiaBenchmarkOptions o = options(1, 4, 1);
    float times[4] = {-1, -1, -1, -1};
    const mtiaError_t st = mtiaBenchmarkKernel(k.fn, kOne, kOne, k.args, 0, nullptr, &o, times);
    EXPECT_TRUE(st == mtiaErrorLaunchFailure || st == mtiaErrorIllegalAddress)
        << mtiaGetErrorName(st) << ": " << mtiaGetLastErrorMessage();
    EXPECT_EQ(times[0], -1.0f);
    mtiaMemoryStats stats = MTIA_MEMORY_STATS_INIT;
    ASSERT_OK(mtiaMemoryGetStats(0, &stats));
    EXPECT_EQ(stats.allocated_bytes[mtiaStatAll].current, 0) << "the flush buffer leaked";
    // Later calls see the sticky fault before launching anything.
    EXPECT_STATUS(st, mtiaBenchmarkKernel(k.fn, kOne, kOne, k.args, 0, nullptr, &o, times));
}

}  // namespace
