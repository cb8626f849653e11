// Device capacity across processes of one simulated machine: runs as test
// sim_shared_capacity (one 64 MiB device, a machine name of its own). Every
// process here is a forked child that initialises the driver itself, since a
// driver with engine threads does not survive fork.
#include "sim_test_util.hpp"

#include <gtest/gtest.h>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>

namespace {

using simtest::envIs;
using simtest::kGran;

constexpr uint64_t kMiB = 1ull << 20;

// Returns the child's pid; the child runs body and _exits with its result.
pid_t spawn(const std::function<int()>& body) {
    fflush(nullptr);
    const pid_t pid = fork();
    if (pid == 0) _exit(body());
    return pid;
}

int exitCode(pid_t pid) {
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

bool readByte(int fd) {
    pollfd p{fd, POLLIN, 0};
    char byte;
    return poll(&p, 1, 20000) == 1 && read(fd, &byte, 1) == 1;
}

void writeByte(int fd) {
    const char byte = 1;
    (void)!write(fd, &byte, 1);
}

TEST(SimSharedCapacity, SecondProcessGetsWhatTheFirstLeavesAndAllAfterItIsKilled) {
    if (!envIs("MTIA_SIM_MEMORY", "64MiB") || !envIs("MTIA_SIM_DEVICES", "1"))
        GTEST_SKIP()
            << "runs as test sim_shared_capacity (MTIA_SIM_DEVICES=1 MTIA_SIM_MEMORY=64MiB)";
    int held[2], killed[2];
    ASSERT_EQ(pipe(held), 0);
    ASSERT_EQ(pipe(killed), 0);
    const pid_t first = spawn([&] {
        const mtiaDriverOps& d = simtest::table();
        mtiaDrvMem mem = nullptr;
        if (d.init(0) != mtiaSuccess || d.memCreate(0, 48 * kMiB, &mem) != mtiaSuccess) return 1;
        writeByte(held[1]);
        sleep(60);  // until killed
        return 0;
    });
    ASSERT_TRUE(readByte(held[0]));
    const pid_t second = spawn([&] {
        const mtiaDriverOps& d = simtest::table();
        if (d.init(0) != mtiaSuccess) return 1;
        uint64_t free = 0, total = 0;
        if (d.memGetInfo(0, &free, &total) != mtiaSuccess || total != 64 * kMiB ||
            free != 16 * kMiB)
            return 2;
        mtiaDrvMem big = nullptr;
        if (d.memCreate(0, 32 * kMiB, &big) != mtiaErrorMemoryAllocation) return 3;
        if (std::string(d.lastErrorMessage()).find("50331648 bytes used of 67108864 total") ==
            std::string::npos)
            return 4;
        mtiaDrvMem small = nullptr;
        if (d.memCreate(0, 16 * kMiB, &small) != mtiaSuccess) return 5;
        if (d.memGetInfo(0, &free, &total) != mtiaSuccess || free != 0) return 6;
        writeByte(held[1]);
        if (!readByte(killed[0])) return 7;  // the first process is gone now
        if (d.memGetInfo(0, &free, &total) != mtiaSuccess || free != 48 * kMiB) return 8;
        if (d.memCreate(0, 32 * kMiB, &big) != mtiaSuccess) return 9;
        if (d.memRelease(big) != mtiaSuccess || d.memRelease(small) != mtiaSuccess) return 10;
        return d.memGetInfo(0, &free, &total) == mtiaSuccess && free == 64 * kMiB ? 0 : 11;
    });
    ASSERT_TRUE(readByte(held[0]));
    kill(first, SIGKILL);
    EXPECT_EQ(exitCode(first), 128 + SIGKILL);
    writeByte(killed[1]);
    EXPECT_EQ(exitCode(second), 0);
    for (int fd : {held[0], held[1], killed[0], killed[1]}) close(fd);
}

}  // namespace
