// Stacks in snapshots: C++ frames named with our own function names (not
// exported ones included), the framework provider's frames and its
// capture/release balance, and identical stacks written once.
#include "history_test_util.hpp"

#include <algorithm>
#include <atomic>
#include <map>
#include <set>
#include <thread>

// Not in an anonymous namespace and not exported: the symbolizer reads the executable's .symtab.
__attribute__((noinline)) void* historyTestAllocatingCaller(size_t bytes) {
    void* p = nullptr;
    if (mtiaMalloc(&p, bytes) != mtiaSuccess) return nullptr;
    asm volatile("" ::: "memory");  // keeps the call from becoming a tail call
    return p;
}

namespace history_test {
namespace {

using Stacks = HistoryTest;

bool contains(const std::vector<std::string>& names, std::string_view what) {
    return std::any_of(names.begin(), names.end(),
                       [&](const std::string& n) { return n.find(what) != std::string::npos; });
}

TEST_F(Stacks, CppFramesStartAtTheCallerAndNameOurFunctions) {
    ASSERT_OK(mtiaMemoryRecordHistory(mtiaHistoryAll, mtiaStacksCpp, 0));
    void* p = historyTestAllocatingCaller(kMiB);
    ASSERT_NE(p, nullptr);
    JsonSnapshot snap;
    auto [seg, block] = snap.block(p);
    ASSERT_FALSE(block.is_null());
    const auto names = frameNames(block);
    ASSERT_FALSE(names.empty());
    EXPECT_NE(names.front().find("historyTestAllocatingCaller"), std::string::npos)
        << "the innermost frame is the caller of mtiaMalloc, got " << names.front();
    EXPECT_TRUE(
        contains(names, "Stacks_CppFramesStartAtTheCallerAndNameOurFunctions_Test::TestBody"));
    EXPECT_FALSE(contains(names, "mtia::allocator::")) << "the runtime's own frames are left out";
    for (element f : block["frames"].get_array()) {
        EXPECT_FALSE(str(f, "filename").empty());
        EXPECT_EQ(i64(f, "line"), 0);
    }
    EXPECT_EQ(frameNames(snap.entries("alloc").at(0)), names)
        << "the alloc entry carries the block's stack";
    EXPECT_EQ(frameNames(seg), names)
        << "the segment carries the stack of the allocation that made it";
    freeOk(p);
}

TEST_F(Stacks, InactiveBlocksAndStacksOffHaveNoFrames) {
    ASSERT_OK(mtiaMemoryRecordHistory(mtiaHistoryAll, mtiaStacksNone, 0));
    void* p = historyTestAllocatingCaller(kMiB);
    JsonSnapshot snap;
    EXPECT_TRUE(frameNames(snap.block(p).second).empty());
    freeOk(p);
    ASSERT_OK(mtiaMemoryRecordHistory(mtiaHistoryAll, mtiaStacksCpp, 0));
    void* q = historyTestAllocatingCaller(kMiB);
    freeOk(q);
    JsonSnapshot after;
    EXPECT_EQ(str(after.block(q).second, "state"), "inactive");
    EXPECT_TRUE(frameNames(after.block(q).second).empty()) << "a cached block has no allocation";
    EXPECT_FALSE(frameNames(after.entries("alloc").back()).empty())
        << "its trace entry keeps the stack";
}

// A provider that hands out ids 1, 2, 3... and counts captures, resolves and releases.
struct CountingProvider {
    std::mutex mu;
    uint64_t next = 1;
    std::set<uint64_t> live;
    int captures = 0;
    int resolves = 0;
    int releases = 0;
    int badReleases = 0;

    void reset() {
        std::lock_guard lock(mu);
        live.clear();
        captures = resolves = releases = badReleases = 0;
    }
    mtiaContextProvider abi() {
        mtiaContextProvider p{};
        p.structSize = sizeof p;
        p.user = this;
        p.capture = [](void* user) -> uint64_t {
            auto* self = static_cast<CountingProvider*>(user);
            std::lock_guard lock(self->mu);
            ++self->captures;
            self->live.insert(self->next);
            return self->next++;
        };
        p.resolve = [](void* user, uint64_t id, mtiaFrameSink emit, void* sink) {
            auto* self = static_cast<CountingProvider*>(user);
            {
                std::lock_guard lock(self->mu);
                ++self->resolves;
            }
            const std::string name = "py_fn_" + std::to_string(id);
            emit(sink, "train.py", static_cast<int64_t>(id), name.c_str());
            emit(sink, "main.py", 7, "main");
        };
        p.release = [](void* user, uint64_t id) {
            auto* self = static_cast<CountingProvider*>(user);
            std::lock_guard lock(self->mu);
            ++self->releases;
            if (self->live.erase(id) == 0) ++self->badReleases;
        };
        return p;
    }
};

TEST_F(Stacks, FrameworkProviderFramesAndBalancedReleases) {
    // Static: a test that fails half-way leaves the provider set, and the fixture's tear-down
    // releases through it.
    static CountingProvider counting;
    counting.reset();
    const mtiaContextProvider abi = counting.abi();
    ASSERT_OK(mtiaMemorySetContextProvider(&abi));
    ASSERT_OK(mtiaMemoryRecordHistory(mtiaHistoryAll, mtiaStacksAll,
                                      16));  // a small ring: entries leave it
    std::vector<void*> kept;
    for (int i = 0; i < 40; ++i) {
        void* p = mallocOn(kKiB * (1 + i % 3));
        if (i % 4 == 0)
            kept.push_back(p);
        else
            freeOk(p);
    }
    {
        JsonSnapshot snap;
        auto [seg, block] = snap.block(kept.back());
        const auto names = frameNames(block);
        ASSERT_GE(names.size(), 3u);
        EXPECT_EQ(names[names.size() - 1], "main") << "framework frames come after the C++ frames";
        EXPECT_EQ(names[names.size() - 2].rfind("py_fn_", 0), 0u);
        const element pyFrame = block["frames"].at(names.size() - 2).value();
        EXPECT_EQ(str(pyFrame, "filename"), "train.py");
    }
    {
        std::lock_guard lock(counting.mu);
        EXPECT_EQ(counting.captures, 40);
        EXPECT_GT(counting.releases, 0)
            << "entries that left the ring and freed blocks gave their ids back";
        EXPECT_EQ(static_cast<size_t>(counting.captures - counting.releases), counting.live.size());
    }
    mtiaContextProvider other = abi;
    EXPECT_FAILS(mtiaErrorIllegalState, mtiaMemorySetContextProvider(&other), "turn recording off");
    for (void* p : kept) freeOk(p);
    ASSERT_OK(mtiaMemoryRecordHistory(mtiaHistoryOff, mtiaStacksNone, 0));
    {
        std::lock_guard lock(counting.mu);
        EXPECT_EQ(counting.releases, counting.captures) << "every captured id is released once";
        EXPECT_EQ(counting.badReleases, 0);
        EXPECT_TRUE(counting.live.empty());
    }
    ASSERT_OK(mtiaMemorySetContextProvider(nullptr));
}

TEST_F(Stacks, IdenticalStacksAreResolvedOnce) {
    // Static: a test that fails half-way leaves the provider set, and the fixture's tear-down
    // releases through it.
    static CountingProvider counting;
    counting.reset();
    const mtiaContextProvider abi = counting.abi();
    ASSERT_OK(mtiaMemorySetContextProvider(&abi));
    ASSERT_OK(mtiaMemoryRecordHistory(mtiaHistoryAll, mtiaStacksFramework, 0));
    void* p = mallocOn(kKiB);
    freeOk(p);
    JsonSnapshot snap;
    EXPECT_EQ(frameNames(snap.entries("free_completed").at(0)),
              frameNames(snap.entries("alloc").at(0)));
    {
        std::lock_guard lock(counting.mu);
        EXPECT_EQ(counting.resolves, 1)
            << "alloc, free_requested and free_completed share one context";
    }
    ASSERT_OK(mtiaMemoryRecordHistory(mtiaHistoryOff, mtiaStacksNone, 0));
    ASSERT_OK(mtiaMemorySetContextProvider(nullptr));
}

TEST_F(Stacks, ConcurrentAllocationsSnapshotsAndModeChanges) {
    static CountingProvider counting;
    counting.reset();
    const mtiaContextProvider abi = counting.abi();
    ASSERT_OK(mtiaMemorySetContextProvider(&abi));
    ASSERT_OK(mtiaMemoryRecordHistory(mtiaHistoryAll, mtiaStacksAll, 64));
    std::atomic<bool> stop{false};
    std::atomic<int> failures{0};
    std::vector<std::thread> workers;
    for (int t = 0; t < 3; ++t)
        workers.emplace_back([&, t] {
            std::vector<void*> held;
            for (int i = 0; i < 400; ++i) {
                void* p = nullptr;
                if (mtiaMalloc(&p, kKiB * static_cast<size_t>(1 + (i + t) % 5)) != mtiaSuccess)
                    ++failures;
                held.push_back(p);
                if (held.size() > 8) {
                    if (mtiaFree(held.front()) != mtiaSuccess) ++failures;
                    held.erase(held.begin());
                }
            }
            for (void* p : held)
                if (mtiaFree(p) != mtiaSuccess) ++failures;
        });
    std::thread snapshots([&] {
        while (!stop.load()) {
            mtiaBuffer buf{};
            if (mtiaMemorySnapshot(mtiaSnapshotPickle, mtiaSnapshotIncludeTraces, &buf) !=
                mtiaSuccess)
                ++failures;
            mtiaBufferFree(&buf);
        }
    });
    std::thread toggles([&] {
        const mtiaHistoryMode modes[] = {mtiaHistoryState, mtiaHistoryAll, mtiaHistoryOff,
                                         mtiaHistoryAll};
        for (int i = 0; !stop.load(); ++i) {
            if (mtiaMemoryRecordHistory(modes[i % 4], mtiaStacksAll,
                                        static_cast<size_t>(16 + i % 50)) != mtiaSuccess)
                ++failures;
            if (mtiaMemoryAnnotate("round", std::to_string(i).c_str()) != mtiaSuccess) ++failures;
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
    });
    for (auto& w : workers) w.join();
    stop = true;
    snapshots.join();
    toggles.join();
    EXPECT_EQ(failures.load(), 0) << mtiaGetLastErrorMessage();
    ASSERT_OK(mtiaMemoryRecordHistory(mtiaHistoryOff, mtiaStacksNone, 0));
    void* p =
        mallocOn(kKiB);  // an allocator call after the last references went: releases are drained
    freeOk(p);
    std::lock_guard lock(counting.mu);
    EXPECT_EQ(counting.releases, counting.captures) << "every captured id is released once";
    EXPECT_EQ(counting.badReleases, 0);
}

}  // namespace
}  // namespace history_test
