// Capacity across processes: reservations, what a death frees, a fuzz under
// a cap (reference/smi-topology-ipc.md section 4.10 case 11), consistent
// readers while a writer hammers its slot (case 9), the request word.
#include "registry_test_util.hpp"

#include "platform/registry/busy_window.hpp"
#include "platform/registry/requests.hpp"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <random>
#include <thread>

namespace mtia::registry::test {
namespace {

TEST(RegistryCapacity, SecondProcessGetsOnlyWhatTheFirstLeaves) {
    const MachineSpec spec = uniqueMachine(2, 64 * kMiB);
    Gate held;
    Gate finish;
    const pid_t first = forkChild([&] {
        std::unique_ptr<Registry> registry;
        if (!Registry::open(spec, {}, registry) || !registry->reserve(0, 48 * kMiB)) return 1;
        held.open();
        finish.wait(30000);
        return 0;
    });
    ASSERT_TRUE(held.wait());
    auto registry = openOrFail(spec);
    const Status tooMuch = registry->reserve(0, 32 * kMiB);
    EXPECT_EQ(tooMuch.code, Code::OutOfCapacity);
    EXPECT_NE(tooMuch.message.find("50331648 bytes held"), std::string::npos) << tooMuch.message;
    EXPECT_TRUE(registry->reserve(0, 16 * kMiB));
    EXPECT_TRUE(registry->reserve(1, 64 * kMiB));  // the other device is untouched
    EXPECT_EQ(registry->used(0), 64 * kMiB);
    EXPECT_EQ(registry->capacity(0) - registry->used(0), 0u);

    killChild(first);
    EXPECT_EQ(registry->used(0), 16 * kMiB);
    EXPECT_TRUE(registry->reserve(0, 48 * kMiB));
    registry->release(0, 64 * kMiB);
    EXPECT_EQ(registry->used(0), 0u);
    EXPECT_EQ(registry->reserve(7, kMiB).code, Code::InvalidArgument);
    registry.reset();
    removeMachine(spec);
}

TEST(RegistryCapacity, FiguresAndPeaksArePublishedPerProcess) {
    const MachineSpec spec = uniqueMachine();
    auto registry = openOrFail(spec);
    ASSERT_TRUE(registry->reserve(1, 8 * kMiB));
    registry->publishAllocated(1, 5 * kMiB);
    registry->publishAllocated(1, 3 * kMiB);
    registry->addBusy(1, 1500, monotonicClockNs());
    registry->release(1, 2 * kMiB);
    std::unique_ptr<Registry> reader;
    ASSERT_TRUE(Registry::openReadOnly(spec.objectName(geteuid()), reader));
    const auto records = reader->processes();
    ASSERT_EQ(records.size(), 1u);
    EXPECT_EQ(records[0].pid, static_cast<uint32_t>(getpid()));
    EXPECT_TRUE(records[0].pidVisible);
    EXPECT_EQ(records[0].localPid, static_cast<uint32_t>(getpid()));
    char comm[17] = {};
    prctl(PR_GET_NAME, comm);
    EXPECT_EQ(records[0].comm, comm);
    const DeviceFigures& f = records[0].devices[1];
    EXPECT_EQ(f.reserved, 6 * kMiB);
    EXPECT_EQ(f.peakReserved, 8 * kMiB);
    EXPECT_EQ(f.allocated, 3 * kMiB);
    EXPECT_EQ(f.peakAllocated, 5 * kMiB);
    EXPECT_EQ(f.busyNs, 1500u);
    EXPECT_EQ(records[0].devices[0].reserved, 0u);
    registry.reset();
    removeMachine(spec);
}

TEST(RegistryCapacity, FuzzAcrossProcessesNeverExceedsTheCap) {
    const uint64_t cap = 64 * kMiB;
    const MachineSpec spec = uniqueMachine(1, cap);
    auto monitor = openOrFail(spec);
    constexpr int kWorkers = 4;
    std::vector<pid_t> workers;
    for (int w = 0; w < kWorkers; ++w) {
        workers.push_back(forkChild([&, w] {
            std::unique_ptr<Registry> registry;
            if (!Registry::open(spec, {}, registry)) return 1;
            std::mt19937 rng(static_cast<unsigned>(w * 7919 + 1));
            uint64_t held = 0;
            for (int i = 0; i < 2000; ++i) {
                const uint64_t bytes = (1 + rng() % 8) * 2 * kMiB;
                if (rng() % 2 == 0) {
                    if (registry->reserve(0, bytes)) held += bytes;
                } else if (held > 0) {
                    const uint64_t back = std::min(held, bytes);
                    registry->release(0, back);
                    held -= back;
                }
            }
            if (w == 0) _exit(0);  // one worker dies holding memory: its share must count as free
            registry->release(0, held);
            return 0;
        }));
    }
    int samples = 0;
    bool running = true;
    while (running) {
        uint64_t used = 0;
        ASSERT_TRUE(monitor->usedExact(0, used));
        ASSERT_LE(used, cap);
        ++samples;
        running = false;
        for (pid_t pid : workers) running = running || kill(pid, 0) == 0;
        // Reap finished workers so kill(pid, 0) stops seeing zombies.
        for (pid_t& pid : workers) {
            int status;
            if (pid > 0 && waitpid(pid, &status, WNOHANG) == pid) {
                EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
                pid = -1;
            }
        }
        running = false;
        for (pid_t pid : workers) running = running || pid > 0;
    }
    EXPECT_GT(samples, 0);
    EXPECT_EQ(monitor->used(0), 0u);
    monitor.reset();
    removeMachine(spec);
}

TEST(RegistryCapacity, ReadersSeeConsistentSlotsWhileTheOwnerWrites) {
    const MachineSpec spec = uniqueMachine(1, 64 * kMiB);
    Gate stop;
    const pid_t writer = forkChild([&] {
        std::unique_ptr<Registry> registry;
        if (!Registry::open(spec, {}, registry)) return 1;
        for (uint64_t i = 0;; ++i) {
            // Identity rewritten by registering again under alternating names; counters hammered
            // between.
            prctl(PR_SET_NAME, i % 2 ? "aaaaaaaaaaaaaaa" : "bbbbbbbbbbbbbbb");
            if (!registry->attach()) return 2;
            for (uint64_t j = 1; j <= 64; ++j) {
                registry->publishAllocated(0, (i * 64 + j) % (48 * kMiB));
                if (registry->reserve(0, 2 * kMiB)) registry->release(0, 2 * kMiB);
            }
            registry.reset();
            if (!Registry::open(spec, {}, registry)) return 3;
            if (stop.wait(0)) return 0;
        }
    });
    KillOnExit guard{writer};
    std::unique_ptr<Registry> reader;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
    uint64_t checked = 0;
    while (std::chrono::steady_clock::now() < deadline) {
        if (!reader && !Registry::openReadOnly(spec.objectName(geteuid()), reader)) continue;
        for (const ProcessRecord& r : reader->processes()) {
            const DeviceFigures& f = r.devices[0];
            ASSERT_GE(f.peakAllocated, f.allocated);
            ASSERT_GE(f.peakReserved, f.reserved);
            ASSERT_LE(f.reserved, 64 * kMiB);
            if (!r.comm.empty()) {
                ASSERT_EQ(r.comm.size(), 15u) << r.comm;
                ASSERT_EQ(r.comm.find_first_not_of(r.comm[0]), std::string::npos) << r.comm;
            }
            ++checked;
        }
    }
    stop.open();
    EXPECT_EQ(waitChild(writer), 0);
    guard.pid = -1;
    EXPECT_GT(checked, 0u);
    reader.reset();
    removeMachine(spec);
}

TEST(RegistryCapacity, RequestWordReachesTheOwnerAndTheAnswerComesBack) {
    const MachineSpec spec = uniqueMachine();
    Gate registered;
    Gate finish;
    const pid_t owner = forkChild([&] {
        std::unique_ptr<Registry> registry;
        if (!Registry::open(spec, {}, registry) || !registry->attach()) return 1;
        registered.open();
        // The slot's request watcher answers; this thread only waits (no handler here:
        // NotSupported).
        return finish.wait(30000) ? 0 : 3;
    });
    KillOnExit guard{owner};
    ASSERT_TRUE(registered.wait());
    auto tool = openOrFail(spec);
    const auto records = tool->processes();
    ASSERT_EQ(records.size(), 1u);
    ASSERT_TRUE(tool->postRequest(records[0].slot, (uint64_t{1} << 32) | 77));
    uint64_t answer = 0;
    for (int i = 0; i < 10000 && answer == 0; ++i) {
        answer = tool->acknowledged(records[0].slot);
        if (answer == 0) usleep(1000);
    }
    EXPECT_EQ(answer, makeAck(RequestResult::NotSupported, 77));
    finish.open();
    EXPECT_EQ(waitChild(owner), 0);
    guard.pid = -1;
    EXPECT_EQ(tool->postRequest(records[0].slot, 1).code, Code::NotFound);  // owner gone
    tool.reset();
    removeMachine(spec);
}

}  // namespace
}  // namespace mtia::registry::test
