// Stress of the caching device allocator: 8 threads allocate random sizes on shared streams of two
// devices, use blocks from kernels on other streams (mtiaRecordStream), free their own blocks and
// blocks other threads handed over, read statistics and empty the cache now and then. At the end
// everything is freed and the statistics must say so: nothing allocated, nothing active, nothing
// reserved after mtiaEmptyCache. Deterministic in its operation count (fixed seeds), not
// time-based; the build runs it under ThreadSanitizer as well. The second round lets the driver
// allocate with the allocator's lock released (release_lock_on_device_malloc:True).
#include <gtest/gtest.h>
#include <mtia/mtia.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int kThreads = 8;
constexpr int kOpsPerThread = 3000;
constexpr int kStreamsPerDevice = 3;

struct Block {
    void* p;
    size_t size;
    mtiaStream_t stream;
    mtiaStream_t
        lastWriter;  // the stream of the last kernel that wrote it (later writers wait for it)
    size_t device;
};

struct Shared {
    std::mutex mu;
    std::vector<Block> handedOver;  // blocks another thread frees
    std::atomic<int> failures{0};
    std::mutex failMu;
    std::vector<std::string> messages;

    void fail(const std::string& what) {
        failures.fetch_add(1);
        std::lock_guard lock(failMu);
        if (messages.size() < 20) messages.push_back(what);
    }
};

mtiaFunction_t fillKernel() {
    static const mtiaFunction_t fn = [] {
        mtiaFunction_t f = nullptr;
        return mtiaGetBuiltinFunction(&f, "fill_f32") == mtiaSuccess ? f : nullptr;
    }();
    return fn;
}

mtiaError_t fill(mtiaStream_t s, void* p, size_t bytes) {
    float* dst = static_cast<float*>(p);
    float value = 1.0f;
    uint64_t n = std::min<size_t>(bytes / sizeof(float), 256);
    void* args[] = {&dst, &value, &n};
    const mtiaDim3 one{1, 1, 1};
    return mtiaLaunchKernel(fillKernel(), one, one, args, 0, s);
}

void worker(int index, Shared& shared, const std::vector<std::vector<mtiaStream_t>>& streams) {
    std::mt19937_64 rng(0x5EED0000u + static_cast<unsigned>(index));
    auto pick = [&](uint64_t n) { return static_cast<size_t>(rng() % n); };
    auto check = [&](mtiaError_t st, const char* what) {
        if (st == mtiaSuccess) return true;
        shared.fail(std::string(what) + " returned " + mtiaGetErrorName(st) + ": " +
                    mtiaGetLastErrorMessage());
        return false;
    };
    std::vector<Block> mine;
    auto freeBlock = [&](const Block& b) { check(mtiaFree(b.p), "mtiaFree"); };
    // Kernels on different streams that write one block are ordered with an event, as a correct
    // program does; the allocator's part is never to hand the block out again while one of them may
    // still run. One event per device (an event belongs to the device current at its creation), and
    // a stream of this thread's own per device for pool routes by stream.
    std::vector<mtiaEvent_t> order(streams.size(), nullptr);
    std::vector<mtiaStream_t> captureStreams(streams.size(), nullptr);
    for (size_t d = 0; d < streams.size(); ++d) {
        check(mtiaSetDevice(static_cast<int>(d)), "mtiaSetDevice");
        check(mtiaEventCreateWithFlags(&order[d], mtiaEventDisableTiming),
              "mtiaEventCreateWithFlags");
        check(mtiaStreamCreate(&captureStreams[d]), "mtiaStreamCreate");
    }
    for (int op = 0; op < kOpsPerThread; ++op) {
        const size_t dice = pick(1000);
        if ((dice < 500 && mine.size() < 48) || mine.empty()) {
            size_t size;
            const size_t kind = pick(100);
            if (kind < 80)
                size = 1 + pick(64 << 10);
            else if (kind < 98)
                size = (1 << 20) + pick(7 << 20);
            else
                size = (10 << 20) + pick(14 << 20);
            const size_t dev = pick(streams.size());
            const auto& devStreams = streams[dev];
            const mtiaStream_t s = devStreams[pick(devStreams.size())];
            void* p = nullptr;
            if (!check(mtiaMallocAsync(&p, size, s), "mtiaMallocAsync")) continue;
            if (pick(10) == 0) check(fill(s, p, size), "fill on the allocating stream");
            mine.push_back({p, size, s, s, dev});
        } else if (dice < 600) {
            // Used by a kernel on another stream of the same device.
            Block& b = mine[pick(mine.size())];
            const auto& devStreams = streams[b.device];
            const mtiaStream_t user = devStreams[pick(devStreams.size())];
            check(mtiaEventRecord(order[b.device], b.lastWriter), "mtiaEventRecord");
            check(mtiaStreamWaitEvent(user, order[b.device], 0), "mtiaStreamWaitEvent");
            check(fill(user, b.p, b.size), "fill on another stream");
            check(mtiaRecordStream(b.p, user), "mtiaRecordStream");
            b.lastWriter = user;
        } else if (dice < 800) {
            const size_t i = pick(mine.size());
            const Block b = mine[i];
            mine[i] = mine.back();
            mine.pop_back();
            if (pick(2) == 0) {
                freeBlock(b);
            } else {
                std::lock_guard lock(shared.mu);
                shared.handedOver.push_back(b);
            }
        } else if (dice < 970) {
            Block b{};
            {
                std::lock_guard lock(shared.mu);
                if (shared.handedOver.empty()) continue;
                const size_t i = pick(shared.handedOver.size());
                b = shared.handedOver[i];
                shared.handedOver[i] = shared.handedOver.back();
                shared.handedOver.pop_back();
            }
            freeBlock(b);  // a block another thread allocated
        } else if (dice < 980) {
            // A private pool: this thread's allocations (NULL filter) or those on a stream of its
            // own (as graph capture does) go there for a few requests; the pool is released at
            // once, with some of its blocks still live (they go back to the device when freed,
            // later, maybe by another thread).
            const size_t dev = pick(streams.size());
            mtiaMemPoolId_t id{};
            if (!check(mtiaGraphPoolHandle(&id), "mtiaGraphPoolHandle")) continue;
            const bool byStream = pick(2) == 0;
            const mtiaStream_t s =
                byStream ? captureStreams[dev] : streams[dev][pick(streams[dev].size())];
            check(mtiaSetDevice(static_cast<int>(dev)), "mtiaSetDevice");
            if (!check(mtiaMemPoolBeginAllocateToPool(static_cast<int>(dev), id,
                                                      byStream ? s : nullptr),
                       "mtiaMemPoolBeginAllocateToPool"))
                continue;
            std::vector<Block> pooled;
            for (int i = 0, n = 1 + static_cast<int>(pick(4)); i < n; ++i) {
                const size_t size = pick(4) == 0 ? (1 << 20) + pick(5 << 20) : 1 + pick(256 << 10);
                void* p = nullptr;
                if (check(mtiaMallocAsync(&p, size, s), "mtiaMallocAsync (pool)"))
                    pooled.push_back({p, size, s, s, dev});
            }
            if (!pooled.empty() && pick(2) == 0) {
                freeBlock(pooled.back());
                pooled.pop_back();
            }
            check(mtiaMemPoolEndAllocateToPool(static_cast<int>(dev), id),
                  "mtiaMemPoolEndAllocateToPool");
            check(mtiaMemPoolRelease(static_cast<int>(dev), id), "mtiaMemPoolRelease");
            for (const Block& b : pooled) {
                if (mine.size() < 64) {
                    mine.push_back(b);
                } else {
                    freeBlock(b);
                }
            }
        } else if (dice < 995) {
            mtiaMemoryStats st = MTIA_MEMORY_STATS_INIT;
            check(mtiaMemoryGetStats(static_cast<int>(pick(streams.size())), &st),
                  "mtiaMemoryGetStats");
            if (st.allocated_bytes[mtiaStatAll].current > st.reserved_bytes[mtiaStatAll].current)
                shared.fail("allocated_bytes above reserved_bytes in a snapshot");
            if (st.allocation[mtiaStatAll].current !=
                st.allocation[mtiaStatSmallPool].current + st.allocation[mtiaStatLargePool].current)
                shared.fail("allocation: all != small + large in a snapshot");
        } else {
            // Another thread's capture-like stream route makes it illegal for a moment.
            const mtiaError_t st = mtiaEmptyCache();
            if (st != mtiaErrorIllegalState) check(st, "mtiaEmptyCache");
        }
    }
    for (const Block& b : mine) freeBlock(b);
    for (mtiaEvent_t e : order) check(mtiaEventDestroy(e), "mtiaEventDestroy");
    for (mtiaStream_t c : captureStreams) {
        check(mtiaStreamSynchronize(c), "mtiaStreamSynchronize");
        check(mtiaStreamDestroy(c), "mtiaStreamDestroy");
    }
}

void runRound(const char* name) {
    int devices = 0;
    ASSERT_EQ(mtiaGetDeviceCount(&devices), mtiaSuccess);
    ASSERT_GE(devices, 1);
    devices = std::min(devices, 2);
    std::vector<std::vector<mtiaStream_t>> streams(static_cast<size_t>(devices));
    for (int d = 0; d < devices; ++d) {
        ASSERT_EQ(mtiaSetDevice(d), mtiaSuccess);
        mtiaStream_t def = nullptr;
        ASSERT_EQ(mtiaGetDefaultStream(d, &def), mtiaSuccess);
        streams[static_cast<size_t>(d)].push_back(def);
        for (int i = 0; i < kStreamsPerDevice; ++i) {
            mtiaStream_t s = nullptr;
            ASSERT_EQ(mtiaStreamCreate(&s), mtiaSuccess);
            streams[static_cast<size_t>(d)].push_back(s);
        }
    }
    ASSERT_EQ(mtiaSetDevice(0), mtiaSuccess);
    Shared shared;
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back(worker, t, std::ref(shared), std::cref(streams));
    for (auto& t : threads) t.join();
    for (const Block& b : shared.handedOver)
        EXPECT_EQ(mtiaFree(b.p), mtiaSuccess) << mtiaGetLastErrorMessage();
    for (const std::string& m : shared.messages) ADD_FAILURE() << name << ": " << m;
    EXPECT_EQ(shared.failures.load(), 0);

    for (int d = 0; d < devices; ++d) {
        for (size_t i = 1; i < streams[static_cast<size_t>(d)].size(); ++i) {
            EXPECT_EQ(mtiaStreamSynchronize(streams[static_cast<size_t>(d)][i]), mtiaSuccess);
            EXPECT_EQ(mtiaStreamDestroy(streams[static_cast<size_t>(d)][i]), mtiaSuccess);
        }
    }
    // Everything is freed: nothing allocated, and once pending frees are done nothing active and
    // nothing requested (requested bytes, like active bytes, count a block until its pending free
    // completes).
    for (int d = 0; d < devices; ++d) {
        SCOPED_TRACE(std::string(name) + ", device " + std::to_string(d));
        mtiaMemoryStats st = MTIA_MEMORY_STATS_INIT;
        ASSERT_EQ(mtiaMemoryGetStats(d, &st), mtiaSuccess);
        for (int v = 0; v < 3; ++v) {
            EXPECT_EQ(st.allocation[v].current, 0);
            EXPECT_EQ(st.allocated_bytes[v].current, 0);
        }
        EXPECT_GT(st.allocation[mtiaStatAll].peak, 8);
        EXPECT_EQ(st.num_ooms, 0);
    }
    ASSERT_EQ(mtiaEmptyCache(), mtiaSuccess);
    for (int d = 0; d < devices; ++d) {
        SCOPED_TRACE(std::string(name) + ", device " + std::to_string(d));
        mtiaMemoryStats st = MTIA_MEMORY_STATS_INIT;
        ASSERT_EQ(mtiaMemoryGetStats(d, &st), mtiaSuccess);
        for (int v = 0; v < 3; ++v) {
            EXPECT_EQ(st.active[v].current, 0);
            EXPECT_EQ(st.active_bytes[v].current, 0);
            EXPECT_EQ(st.requested_bytes[v].current, 0);
            EXPECT_EQ(st.inactive_split[v].current, 0);
            EXPECT_EQ(st.inactive_split_bytes[v].current, 0);
            EXPECT_EQ(st.reserved_bytes[v].current, 0);
            EXPECT_EQ(st.segment[v].current, 0);
        }
        ASSERT_EQ(mtiaSetDevice(d), mtiaSuccess);
        size_t free = 0, total = 0;
        ASSERT_EQ(mtiaMemGetInfo(&free, &total), mtiaSuccess);
        EXPECT_EQ(free, total)
            << "device memory still in use after everything was freed and emptied";
    }
    ASSERT_EQ(mtiaSetDevice(0), mtiaSuccess);
    std::printf("%s: %d threads x %d operations in %.2f s\n", name, kThreads, kOpsPerThread,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

}  // namespace

TEST(AllocStress, EightThreadsAllocateAndFreeAcrossStreamsAndThreads) {
    runRound("default settings");
    ASSERT_EQ(mtiaAllocatorSetConfig("release_lock_on_device_malloc:True"), mtiaSuccess);
    runRound("release_lock_on_device_malloc:True");
    // No round with expandable_segments:True: with 16 GiB devices each stream's and pool's segment
    // reserves an eighth of the simulated address space, and this many streams and pools exhaust
    // it.
}
