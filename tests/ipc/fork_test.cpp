// A child forked from a process that initialised the runtime (Note [fork] in
// runtime/context/runtime.cpp): every device call fails at once with mtiaErrorInitializationError,
// nothing blocks, nothing reports a success whose work never runs, and the child's exit does not
// hang; the parent goes on unaffected. Before, the child's mtiaMemcpy and mtiaMemset waited forever
// for engines it does not have, and mtiaMemsetAsync, mtiaEventRecord and launches succeeded while
// their work never ran.
#include "tests/ipc/ipc_test_util.hpp"

#include <mtia/mtia.h>
#include <mtia/mtia_ml.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <vector>

namespace mtia::ipc::test {
namespace {

constexpr const char* kForked = "a forked child cannot use its parent's devices";

// forkChild ends its children with _exit(); this one returns through exit(), so the runtime's exit
// handlers and static destructors run in the child as in a real program.
template <class Body>
pid_t forkExitingChild(Body body) {
    const pid_t pid = fork();
    if (pid == 0) std::exit(body());
    return pid;
}

void waitForFlag(void* flag) {
    auto* f = static_cast<std::atomic<int>*>(flag);
    while (f->load() == 0) usleep(1000);
}

TEST(Fork, EveryDeviceCallInAChildFailsAtOnce) {
    const pid_t parent = forkChild([] {
        watchdog();
        void* dev = nullptr;
        void* pinned = nullptr;
        mtiaStream_t stream = nullptr;
        mtiaEvent_t event = nullptr;
        mtiaFunction_t noop = nullptr;
        mtiaGraph_t graph = nullptr;
        IPC_CHECK(mtiaMalloc(&dev, 1 << 20) == mtiaSuccess);
        IPC_CHECK(mtiaMallocHost(&pinned, 4096) == mtiaSuccess);
        IPC_CHECK(mtiaStreamCreate(&stream) == mtiaSuccess);
        IPC_CHECK(mtiaEventCreate(&event) == mtiaSuccess);
        IPC_CHECK(mtiaGetBuiltinFunction(&noop, "noop") == mtiaSuccess);
        IPC_CHECK(mtiaGraphCreate(&graph, 0) == mtiaSuccess);
        // The device is busy at the fork: the stream waits for the flag in a host function.
        static std::atomic<int> release{0};
        IPC_CHECK(mtiaLaunchHostFunc(stream, waitForFlag, &release) == mtiaSuccess);
        IPC_CHECK(mtiaMemsetAsync(dev, 1, 1 << 20, stream) == mtiaSuccess);

        const pid_t child = forkExitingChild([&] {
            watchdog(
                30);  // a hang (here or in the exit handlers) ends as SIGALRM, not as a stuck test
            std::vector<char> a(4096, 1), b(4096, 2);
            IPC_CHECK_ERROR(mtiaMemcpy(b.data(), a.data(), a.size(), mtiaMemcpyHostToHost),
                            mtiaErrorInitializationError, kForked);
            IPC_CHECK_ERROR(mtiaMemcpy(b.data(), a.data(), a.size(), mtiaMemcpyDefault),
                            mtiaErrorInitializationError, kForked);
            IPC_CHECK_ERROR(mtiaMemcpy(dev, a.data(), a.size(), mtiaMemcpyHostToDevice),
                            mtiaErrorInitializationError, kForked);
            IPC_CHECK_ERROR(mtiaMemset(dev, 0, 4096), mtiaErrorInitializationError, kForked);
            IPC_CHECK_ERROR(mtiaMemsetAsync(dev, 0, 4096, stream), mtiaErrorInitializationError,
                            kForked);
            IPC_CHECK_ERROR(mtiaMemcpyAsync(dev, a.data(), 4096, mtiaMemcpyHostToDevice, stream),
                            mtiaErrorInitializationError, kForked);
            IPC_CHECK_ERROR(mtiaStreamQuery(stream), mtiaErrorInitializationError, kForked);
            IPC_CHECK_ERROR(mtiaStreamSynchronize(stream), mtiaErrorInitializationError, kForked);
            IPC_CHECK_ERROR(mtiaDeviceSynchronize(), mtiaErrorInitializationError, kForked);
            IPC_CHECK_ERROR(mtiaEventRecord(event, stream), mtiaErrorInitializationError, kForked);
            IPC_CHECK_ERROR(mtiaEventQuery(event), mtiaErrorInitializationError, kForked);
            IPC_CHECK_ERROR(mtiaEventSynchronize(event), mtiaErrorInitializationError, kForked);
            IPC_CHECK_ERROR(
                mtiaLaunchKernel(noop, mtiaDim3{1, 1, 1}, mtiaDim3{1, 1, 1}, nullptr, 0, stream),
                mtiaErrorInitializationError, kForked);
            IPC_CHECK_ERROR(mtiaLaunchHostFunc(stream, waitForFlag, &release),
                            mtiaErrorInitializationError, kForked);
            IPC_CHECK_ERROR(mtiaGraphCaptureBegin(graph, stream, mtiaMemPoolId_t{},
                                                  mtiaStreamCaptureModeGlobal),
                            mtiaErrorInitializationError, kForked);
            void* more = nullptr;
            IPC_CHECK_ERROR(mtiaMalloc(&more, 4096), mtiaErrorInitializationError, kForked);
            IPC_CHECK(more == nullptr);
            IPC_CHECK_ERROR(mtiaFree(dev), mtiaErrorInitializationError, kForked);
            IPC_CHECK_ERROR(mtiaMallocHost(&more, 4096), mtiaErrorInitializationError, kForked);
            IPC_CHECK_ERROR(mtiaFreeHost(pinned), mtiaErrorInitializationError, kForked);
            mtiaStream_t another = nullptr;
            IPC_CHECK_ERROR(mtiaStreamCreate(&another), mtiaErrorInitializationError, kForked);
            IPC_CHECK_ERROR(mtiaSetDevice(0), mtiaErrorInitializationError, kForked);
            IPC_CHECK_ERROR(mtiaInit(0), mtiaErrorInitializationError, kForked);
            mtiaMemoryStats stats{};
            stats.structSize = sizeof stats;
            IPC_CHECK_ERROR(mtiaMemoryGetStats(0, &stats), mtiaErrorInitializationError, kForked);
            // As after a failed initialisation: no usable device.
            int count = -1;
            IPC_CHECK(mtiaGetDeviceCount(&count) == mtiaSuccess);
            IPC_CHECK(count == 0);
            // The management library reads the registry, not the runtime: it keeps working.
            int32_t mlCount = 0;
            IPC_CHECK(mtiamlInit() == mtiaSuccess);
            IPC_CHECK(mtiamlDeviceGetCount(&mlCount) == mtiaSuccess);
            IPC_CHECK(mlCount == 1);
            IPC_CHECK(mtiamlShutdown() == mtiaSuccess);
            return 0;  // exit(): the exit handlers must not wait for the parent's queued work or
                       // locks
        });
        IPC_CHECK(child > 0);
        IPC_CHECK(waitChild(child) == 0);

        // The parent's work and objects are untouched.
        release.store(1);
        IPC_CHECK(mtiaStreamSynchronize(stream) == mtiaSuccess);
        std::vector<unsigned char> back(1 << 20);
        IPC_CHECK(mtiaMemcpy(back.data(), dev, back.size(), mtiaMemcpyDeviceToHost) == mtiaSuccess);
        for (unsigned char c : back) IPC_CHECK(c == 1);
        IPC_CHECK(mtiaGraphDestroy(graph) == mtiaSuccess);
        IPC_CHECK(mtiaEventDestroy(event) == mtiaSuccess);
        IPC_CHECK(mtiaStreamDestroy(stream) == mtiaSuccess);
        IPC_CHECK(mtiaFreeHost(pinned) == mtiaSuccess);
        IPC_CHECK(mtiaFree(dev) == mtiaSuccess);
        return 0;
    });
    KillOnExit guard{parent};
    EXPECT_EQ(waitChild(parent), 0);
}

// A child forked before the process ever called the runtime starts one of its own.
TEST(Fork, AChildForkedBeforeInitialisationStartsItsOwn) {
    const pid_t child = forkChild([] {
        watchdog();
        void* dev = nullptr;
        IPC_CHECK(mtiaMalloc(&dev, 4096) == mtiaSuccess);
        IPC_CHECK(mtiaMemset(dev, 7, 4096) == mtiaSuccess);
        unsigned char c = 0;
        IPC_CHECK(mtiaMemcpy(&c, dev, 1, mtiaMemcpyDeviceToHost) == mtiaSuccess);
        IPC_CHECK(c == 7);
        IPC_CHECK(mtiaFree(dev) == mtiaSuccess);
        return 0;
    });
    KillOnExit guard{child};
    EXPECT_EQ(waitChild(child), 0);
}

}  // namespace
}  // namespace mtia::ipc::test
