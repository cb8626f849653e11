// Who is alive, and what a death leaves behind: reference/smi-topology-ipc.md
// section 4.10 cases 1 (killed inside admission), 5 (slot exhaustion),
// 6 (pid reuse), 7 (fork without exec), 8 (pid namespaces) and 10 (lock
// descriptor discipline), plus reaping.
#include "registry_test_util.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstring>

namespace mtia::registry::test {
namespace {

const ProcessRecord* findSlot(const std::vector<ProcessRecord>& records, uint32_t slot) {
    for (const ProcessRecord& r : records)
        if (r.slot == slot) return &r;
    return nullptr;
}

TEST(RegistryLiveness, KilledInsideAdmissionIsRecoveredAndNotCounted) {
    const MachineSpec spec = uniqueMachine(1, 64 * kMiB);
    const pid_t child = forkChild([&] {
        std::unique_ptr<Registry> registry;
        if (!Registry::open(spec, {}, registry)) return 1;
        if (!registry->reserve(0, 48 * kMiB)) return 2;
        killSelfAt(testing::Point::HoldingAdmission);
        (void)registry->reserve(0, 8 * kMiB);  // dies holding the robust mutex
        return 3;
    });
    ASSERT_EQ(waitChild(child), 128 + SIGKILL);

    auto registry =
        openOrFail(spec, {.slots = kDefaultSlots, .lockTimeout = std::chrono::milliseconds(3000)});
    // EOWNERDEAD is repaired, and the dead child's 48 MiB count as free: the whole device fits, and
    // no more than that.
    const Status whole = registry->reserve(0, 64 * kMiB);
    ASSERT_TRUE(whole) << whole.message;
    EXPECT_EQ(registry->admissionRecoveries(), 1u);
    EXPECT_EQ(registry->reserve(0, 2 * kMiB).code, Code::OutOfCapacity);
    uint64_t exact = 0;
    ASSERT_TRUE(registry->usedExact(0, exact));
    EXPECT_EQ(exact, 64 * kMiB);
    registry.reset();
    removeMachine(spec);
}

TEST(RegistryLiveness, SlotExhaustionIsACleanErrorAndReadersStillWork) {
    const MachineSpec spec = uniqueMachine();
    const Registry::Options options{.slots = 4};
    auto mine = openOrFail(spec, options);
    ASSERT_TRUE(mine->attach());
    Gate release;
    std::vector<pid_t> holders;
    for (int i = 0; i < 3; ++i) {
        Gate ready;
        holders.push_back(forkChild([&] {
            std::unique_ptr<Registry> registry;
            if (!Registry::open(spec, options, registry) || !registry->attach()) return 1;
            ready.open();
            release.wait(30000);
            return 0;
        }));
        ASSERT_TRUE(ready.wait());
    }
    const pid_t extra = forkChild([&] {
        std::unique_ptr<Registry> registry;
        if (!Registry::open(spec, options, registry)) return 1;
        const Status status = registry->attach();
        if (status.code != Code::SlotsExhausted) return 2;
        return registry->reserve(0, 2 * kMiB).code == Code::SlotsExhausted ? 0 : 3;
    });
    EXPECT_EQ(waitChild(extra), 0);

    std::unique_ptr<Registry> reader;
    ASSERT_TRUE(Registry::openReadOnly(spec.objectName(geteuid()), reader));
    EXPECT_EQ(reader->processes().size(), 4u);

    // A slot is free again as soon as its owner dies.
    killChild(holders.back());
    holders.pop_back();
    const pid_t late = forkChild([&] {
        std::unique_ptr<Registry> registry;
        return Registry::open(spec, options, registry) && registry->attach() ? 0 : 1;
    });
    EXPECT_EQ(waitChild(late), 0);
    for (int i = 0; i < 2; ++i) release.open();
    for (pid_t pid : holders) EXPECT_EQ(waitChild(pid), 0);
    mine.reset();
    removeMachine(spec);
}

TEST(RegistryLiveness, DeadSlotWhosePidIsReusedIsDead) {
    // Waiting for the kernel to hand the same pid out again is not practical; instead the dead slot
    // is made to carry the pid and start time of a live, unrelated process (this one): exactly what
    // a reused pid looks like to a kill(pid, 0) check.
    const MachineSpec spec = uniqueMachine();
    Gate registered;
    const pid_t child = forkChild([&] {
        std::unique_ptr<Registry> registry;
        if (!Registry::open(spec, {}, registry) || !registry->reserve(0, 8 * kMiB)) return 1;
        registered.open();
        sleep(60);  // killed by the test; gone by itself should the test fail early
        return 0;
    });
    ASSERT_TRUE(registered.wait());
    auto registry = openOrFail(spec);
    ASSERT_EQ(registry->processes().size(), 1u);
    const uint32_t slot = registry->processes()[0].slot;
    killChild(child);
    const ProcessRecord me = [&] {
        auto self = openOrFail(spec);
        EXPECT_TRUE(self->attach());
        for (const ProcessRecord& r : self->processes())
            if (r.self) return r;
        return ProcessRecord{};
    }();
    editObject(spec, [&](char* bytes, size_t) {
        Slot& s = reinterpret_cast<Slot*>(bytes + kHeaderBytes)[slot];
        s.pid = static_cast<uint32_t>(getpid());
        s.startTime = me.startTime;
    });
    EXPECT_FALSE(registry->slotAlive(slot));
    EXPECT_EQ(findSlot(registry->processes(), slot), nullptr);
    EXPECT_EQ(registry->used(0), 0u);
    registry.reset();
    removeMachine(spec);
}

TEST(RegistryLiveness, ForkedChildRegistersAnewAndParentStaysCorrect) {
    const MachineSpec spec = uniqueMachine();
    auto registry = openOrFail(spec);
    ASSERT_TRUE(registry->reserve(0, 16 * kMiB));
    const int32_t parentSlot = registry->slot();
    ASSERT_GE(parentSlot, 0);
    const pid_t child = forkChild([&] {
        // The inherited registry is not registered in the child, and the parent's figures are not
        // ours.
        if (registry->slot() != -1) return 1;
        if (registry->used(0) != 16 * kMiB) return 2;
        registry->release(0, 16 * kMiB);  // what the parent holds cannot be given back by us
        if (registry->used(0) != 16 * kMiB) return 3;
        if (!registry->reserve(0, 8 * kMiB)) return 4;
        if (registry->slot() == parentSlot || registry->slot() < 0) return 5;
        if (registry->processes().size() != 2) return 6;
        return registry->used(0) == 24 * kMiB ? 0 : 7;
    });
    EXPECT_EQ(waitChild(child), 0);
    EXPECT_EQ(registry->slot(), parentSlot);
    EXPECT_EQ(registry->used(0), 16 * kMiB);
    ASSERT_EQ(registry->processes().size(), 1u);
    EXPECT_TRUE(registry->processes()[0].self);
    registry.reset();
    removeMachine(spec);
}

TEST(RegistryLiveness, ForkedChildDoesNotKeepDeadParentAlive) {
    // OFD locks belong to the open file description, which fork shares: without the child handler
    // closing its copy, the child would keep a killed parent's slot "alive".
    const MachineSpec spec = uniqueMachine();
    Gate ready;
    Gate grandchildStarted;
    int pidPipe[2];
    ASSERT_EQ(pipe(pidPipe), 0);
    const pid_t parent = forkChild([&] {
        std::unique_ptr<Registry> registry;
        if (!Registry::open(spec, {}, registry) || !registry->reserve(0, 32 * kMiB)) return 1;
        const pid_t grandchild = forkChild([&] {
            grandchildStarted.open();  // fork has returned here: the child handler has run
            sleep(60);  // killed by the test; gone by itself should the test fail early
            return 0;
        });
        (void)!write(pidPipe[1], &grandchild, sizeof grandchild);
        if (!grandchildStarted.wait()) return 2;
        ready.open();
        sleep(60);  // killed by the test; gone by itself should the test fail early
        return 0;
    });
    ASSERT_TRUE(ready.wait());
    pid_t grandchild = 0;
    ASSERT_EQ(read(pidPipe[0], &grandchild, sizeof grandchild),
              static_cast<ssize_t>(sizeof grandchild));
    close(pidPipe[0]);
    close(pidPipe[1]);
    auto registry = openOrFail(spec);
    EXPECT_EQ(registry->used(0), 32 * kMiB);
    killChild(parent);
    EXPECT_EQ(kill(grandchild, 0), 0);  // still running
    EXPECT_EQ(registry->used(0), 0u);
    EXPECT_TRUE(registry->processes().empty());
    kill(grandchild, SIGKILL);
    registry.reset();
    removeMachine(spec);
}

TEST(RegistryLiveness, PidNamespacesShowEachObserverItsOwnPids) {
    if (geteuid() != 0)
        GTEST_SKIP() << "needs CAP_SYS_ADMIN for unshare(CLONE_NEWPID); runs as root in CI";
    const MachineSpec spec = uniqueMachine();
    auto host = openOrFail(spec);
    ASSERT_TRUE(host->attach());
    Gate registered;
    Gate done;
    int pipeFds[2];
    ASSERT_EQ(pipe(pipeFds), 0);
    const pid_t outer = forkChild([&] {
        if (unshare(CLONE_NEWPID) != 0) return 10;
        const pid_t inner = forkChild([&] {
            // pid 1 of a new namespace: the host observer must not be told "1".
            std::unique_ptr<Registry> registry;
            if (!Registry::open(spec, {}, registry) || !registry->reserve(0, 2 * kMiB)) return 1;
            bool sawHostOnlyAsUnknown = false;
            for (const ProcessRecord& r : registry->processes()) {
                if (r.self && (r.pid != 1 || !r.pidVisible || r.localPid != 1)) return 2;
                if (!r.self) sawHostOnlyAsUnknown = !r.pidVisible && r.localPid == 0;
            }
            if (!sawHostOnlyAsUnknown) return 3;
            registered.open();
            done.wait(30000);
            return 0;
        });
        (void)!write(pipeFds[1], &inner, sizeof inner);
        return waitChild(inner);
    });
    pid_t innerHostPid = 0;
    ASSERT_EQ(read(pipeFds[0], &innerHostPid, sizeof innerHostPid),
              static_cast<ssize_t>(sizeof innerHostPid));
    close(pipeFds[0]);
    close(pipeFds[1]);
    ASSERT_TRUE(registered.wait());
    bool found = false;
    for (const ProcessRecord& r : host->processes()) {
        if (r.self) continue;
        found = true;
        EXPECT_EQ(r.pid, 1u);  // what it calls itself
        EXPECT_FALSE(r.pidVisible);
        EXPECT_EQ(r.localPid, static_cast<uint32_t>(innerHostPid));  // what the host calls it
        EXPECT_EQ(r.devices[0].reserved, 2 * kMiB);
    }
    EXPECT_TRUE(found);
    done.open();
    EXPECT_EQ(waitChild(outer), 0);
    host.reset();
    removeMachine(spec);
}

TEST(RegistryLiveness, InProcessReaderKeepsTheRegistration) {
    // Classic POSIX locks vanish when any descriptor of the file closes in the process; the
    // liveness locks are OFD locks, so a reader opened and closed next to the runtime changes
    // nothing.
    const MachineSpec spec = uniqueMachine();
    auto registry = openOrFail(spec);
    ASSERT_TRUE(registry->reserve(0, 4 * kMiB));
    const std::string name = spec.objectName(geteuid());
    for (int i = 0; i < 3; ++i) {
        std::unique_ptr<Registry> reader;
        ASSERT_TRUE(Registry::openReadOnly(name, reader));
        ASSERT_EQ(reader->processes().size(), 1u);  // sees this process's own slot as live
        EXPECT_EQ(reader->used(0), 4 * kMiB);
    }
    const int fd = open(lockPath(name).c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    close(fd);
    const pid_t observer = forkChild([&] {
        std::unique_ptr<Registry> reader;
        if (!Registry::openReadOnly(name, reader)) return 1;
        return reader->used(0) == 4 * kMiB && reader->processes().size() == 1 ? 0 : 2;
    });
    EXPECT_EQ(waitChild(observer), 0);
    registry.reset();
    removeMachine(spec);
}

TEST(RegistryLiveness, ReapFreesSlotsOfTheDead) {
    const MachineSpec spec = uniqueMachine();
    std::vector<pid_t> children;
    for (int i = 0; i < 2; ++i) {
        Gate ready;
        children.push_back(forkChild([&] {
            std::unique_ptr<Registry> registry;
            if (!Registry::open(spec, {}, registry) || !registry->reserve(1, 6 * kMiB)) return 1;
            ready.open();
            sleep(60);  // killed by the test; gone by itself should the test fail early
            return 0;
        }));
        ASSERT_TRUE(ready.wait());
    }
    auto registry = openOrFail(spec);
    EXPECT_EQ(registry->reap(), 0u);  // both alive
    for (pid_t pid : children) killChild(pid);
    EXPECT_EQ(registry->reap(), 2u);
    EXPECT_EQ(registry->reap(), 0u);
    EXPECT_EQ(registry->used(1), 0u);
    ASSERT_TRUE(registry->attach());
    ASSERT_EQ(registry->processes().size(), 1u);
    registry.reset();
    removeMachine(spec);
}

}  // namespace
}  // namespace mtia::registry::test
