// Kernels that fault (issue 20, item 1): a signal raised by a kernel becomes a sticky fault of its
// device, with the right code and a message that names the kernel; the process survives and the
// other device keeps working; mtiaDeviceReset releases what the process held of the device
// (handles answer mtiaErrorInvalidHandle, no memory left in the statistics, mtiaMemGetInfo or the
// registry) and makes it usable again. Signals outside kernels keep their normal behaviour: the
// application's own handler runs, a host function's fault ends the process.
//
// Each KernelFault test runs in a test entry of its own (a failed reset would leave device 0
// faulted for the next); the OwnSignals and ResetIpc tests fork children that start the runtime
// themselves, so their entries must not have started it in the parent first.
// MTIA_TEST_FAULT_KERNELS names the module (fault_kernels.c).
#include <gtest/gtest.h>
#include <mtia/mtia.h>
#include <mtia/mtia_ml.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "common/child_process.hpp"
#include "common/status.hpp"

using namespace mtia_test;

namespace {

const char* modulePath() {
    const char* path = std::getenv("MTIA_TEST_FAULT_KERNELS");
    return path != nullptr ? path : "";
}

mtiaFunction_t kernelOf(const char* name) {
    mtiaModule_t module = nullptr;
    if (mtiaModuleLoad(&module, modulePath()) != mtiaSuccess) return nullptr;
    mtiaFunction_t fn = nullptr;
    if (mtiaModuleGetFunction(&fn, module, name) != mtiaSuccess) return nullptr;
    return fn;
}

mtiaError_t launch1(mtiaFunction_t fn, void** args, mtiaStream_t stream = nullptr) {
    return mtiaLaunchKernel(fn, mtiaDim3{1, 1, 1}, mtiaDim3{1, 1, 1}, args, 0, stream);
}

// iota_i32 on dev's current stream; true when the device computed out[i] = i + base.
::testing::AssertionResult iotaWorks(int dev, int base) {
    if (mtiaSetDevice(dev) != mtiaSuccess) return ::testing::AssertionFailure() << "set device";
    mtiaFunction_t iota = kernelOf("iota_i32");
    if (iota == nullptr) return ::testing::AssertionFailure() << "no iota_i32";
    constexpr uint64_t n = 64;
    int* buf = nullptr;
    if (mtiaError_t e = mtiaMalloc(reinterpret_cast<void**>(&buf), n * sizeof(int));
        e != mtiaSuccess)
        return ::testing::AssertionFailure() << "mtiaMalloc: " << mtiaGetErrorName(e);
    uint64_t count = n;
    void* args[] = {&buf, &base, &count};
    std::vector<int> host(n, -1);
    mtiaError_t e = launch1(iota, args);
    if (e == mtiaSuccess) e = mtiaMemcpy(host.data(), buf, n * sizeof(int), mtiaMemcpyDeviceToHost);
    if (e == mtiaSuccess) e = mtiaDeviceSynchronize();
    (void)mtiaFree(buf);
    if (e != mtiaSuccess)
        return ::testing::AssertionFailure() << "device " << dev << ": " << mtiaGetErrorName(e)
                                             << ": " << mtiaGetLastErrorMessage();
    for (uint64_t i = 0; i < n; ++i)
        if (host[i] != static_cast<int>(i) + base)
            return ::testing::AssertionFailure() << "out[" << i << "] = " << host[i];
    return ::testing::AssertionSuccess();
}

std::string pointerText(const void* p) {
    char text[32];
    std::snprintf(text, sizeof(text), "%p", p);
    return text;
}

// What the process holds of device 0 before its kernel faults: each must be released by the reset.
struct Holdings {
    mtiaStream_t stream = nullptr;  // also the thread's current stream on device 0
    mtiaEvent_t event = nullptr;
    mtiaGraph_t graph = nullptr;  // captured on stream, with an allocation of its private pool
    void* memory = nullptr;
};

// This process's memory on dev as the registry (what mtia-smi reads) publishes it.
void registryMemory(int dev, uint64_t& reserved, uint64_t& allocated) {
    reserved = allocated = UINT64_MAX;
    ASSERT_OK(mtiamlInit());
    mtiamlProcessInfo infos[16];
    for (auto& i : infos) i = MTIAML_PROCESS_INFO_INIT;
    uint32_t count = 16;
    ASSERT_OK(mtiamlDeviceGetProcesses(dev, &count, infos));
    reserved = allocated = 0;  // no entry: nothing published
    for (uint32_t i = 0; i < count; ++i)
        if (infos[i].pid == static_cast<uint32_t>(getpid())) {
            reserved = infos[i].memoryReserved;
            allocated = infos[i].memoryAllocated;
        }
}

void hold(Holdings& h) {
    ASSERT_OK(mtiaSetDevice(0));
    ASSERT_OK(mtiaStreamCreate(&h.stream));
    ASSERT_OK(mtiaEventCreate(&h.event));
    ASSERT_OK(mtiaMalloc(&h.memory, 3 << 20));
    ASSERT_OK(mtiaEventRecord(h.event, h.stream));
    ASSERT_OK(mtiaGraphCreate(&h.graph, 0));
    ASSERT_OK(mtiaGraphCaptureBegin(h.graph, h.stream, mtiaMemPoolId_t{0, 0},
                                    mtiaStreamCaptureModeThreadLocal));
    void* inPool = nullptr;
    ASSERT_OK(mtiaMallocAsync(&inPool, 1 << 20, h.stream));
    ASSERT_OK(mtiaMemsetAsync(inPool, 0, 1 << 20, h.stream));
    ASSERT_OK(mtiaGraphCaptureEnd(h.graph));
    ASSERT_OK(mtiaGraphReplay(h.graph, h.stream));
    ASSERT_OK(mtiaStreamSynchronize(h.stream));
    ASSERT_OK(mtiaSetCurrentStream(h.stream));
    // What the checks after the reset look at does show the memory now.
    uint64_t reserved = 0, allocated = 0;
    ASSERT_NO_FATAL_FAILURE(registryMemory(0, reserved, allocated));
    EXPECT_GT(reserved, 0u);
    EXPECT_GT(allocated, 0u);
    size_t free = 0, total = 0;
    ASSERT_OK(mtiaMemGetInfo(&free, &total));
    EXPECT_LT(free, total);
}

// After mtiaDeviceReset: every handle of h is stale, no memory of this process remains on device
// 0, and the device computes again (on the current stream, which fell back to the default one).
void expectReleased(const Holdings& h) {
    EXPECT_STATUS(mtiaErrorInvalidHandle, mtiaStreamSynchronize(h.stream));
    EXPECT_STATUS(mtiaErrorInvalidHandle, mtiaEventQuery(h.event));
    EXPECT_STATUS(mtiaErrorInvalidHandle, mtiaGraphReplay(h.graph, nullptr));
    EXPECT_STATUS(mtiaErrorInvalidValue, mtiaFree(h.memory));
    mtiaStream_t current = nullptr, byDefault = nullptr;
    EXPECT_OK(mtiaGetCurrentStream(0, &current));
    EXPECT_OK(mtiaGetDefaultStream(0, &byDefault));
    EXPECT_EQ(current, byDefault) << "the current stream should fall back to the default stream";

    mtiaMemoryStats stats = MTIA_MEMORY_STATS_INIT;
    ASSERT_OK(mtiaMemoryGetStats(0, &stats));
    EXPECT_EQ(stats.allocated_bytes[mtiaStatAll].current, 0);
    EXPECT_EQ(stats.reserved_bytes[mtiaStatAll].current, 0);
    EXPECT_EQ(stats.segment[mtiaStatAll].current, 0);
    size_t free = 0, total = 0;
    ASSERT_OK(mtiaSetDevice(0));
    ASSERT_OK(mtiaMemGetInfo(&free, &total));
    EXPECT_EQ(free, total) << "device memory still held after the reset";
    uint64_t reserved = 0, allocated = 0;
    registryMemory(0, reserved, allocated);
    EXPECT_EQ(reserved, 0u);
    EXPECT_EQ(allocated, 0u);

    EXPECT_TRUE(iotaWorks(0, 5));
    EXPECT_OK(mtiaDeviceSynchronize());
    EXPECT_TRUE(iotaWorks(1, 9));
}

// Launches kernel with args on device 0 and checks what a faulting kernel must give: the code from
// the call that observes it, a message with each needle, device 0's later work refused, device 1
// unaffected.
// prepare runs after the holdings were made, just before the launch.
void expectKernelFault(const char* kernel, void** args, mtiaError_t want,
                       const std::function<std::vector<std::string>()>& prepare) {
    Holdings held;
    ASSERT_NO_FATAL_FAILURE(hold(held));
    const std::vector<std::string> needles = prepare();
    ASSERT_OK(mtiaSetDevice(0));
    mtiaFunction_t fn = kernelOf(kernel);
    ASSERT_NE(fn, nullptr) << "cannot load " << kernel << " from '" << modulePath() << "'";
    ASSERT_OK(launch1(fn, args));
    ASSERT_STATUS(want, mtiaDeviceSynchronize());
    const std::string message = mtiaGetLastErrorMessage();
    for (const std::string& needle : needles)
        EXPECT_NE(message.find(needle), std::string::npos)
            << "the message lacks '" << needle << "': " << message;
    // Sticky: the device runs nothing more, and says why again.
    EXPECT_STATUS(want, mtiaDeviceSynchronize());
    EXPECT_FALSE(iotaWorks(0, 1));
    EXPECT_TRUE(iotaWorks(1, 7));

    ASSERT_OK(mtiaSetDevice(0));
    ASSERT_OK(mtiaDeviceReset());
    EXPECT_OK(mtiaDeviceSynchronize());
    expectReleased(held);
}

void expectKernelFault(const char* kernel, void** args, mtiaError_t want,
                       const std::vector<std::string>& needles) {
    expectKernelFault(kernel, args, want, [&] { return needles; });
}

}  // namespace

TEST(KernelFault, NullPointerWrite) {
    void* null = nullptr;
    void* args[] = {&null};
    expectKernelFault(
        "write_at", args, mtiaErrorIllegalAddress,
        {"kernel 'write_at'", modulePath(), "SIGSEGV", "address 0x0", "not device memory"});
}

TEST(KernelFault, UnmappedDeviceAddress) {
    void* target = nullptr;
    void* args[] = {&target};
    expectKernelFault("write_at", args, mtiaErrorIllegalAddress, [&] {
        void* gone = nullptr;
        EXPECT_OK(mtiaMalloc(&gone, 32 << 20));  // large enough for a segment of its own
        EXPECT_OK(mtiaFree(gone));
        EXPECT_OK(mtiaEmptyCache());  // back to the device: reserved address range, nothing mapped
        target = static_cast<char*>(gone) + 4096;
        return std::vector<std::string>{"kernel 'write_at'", "SIGSEGV",
                                        "address " + pointerText(target),
                                        "device 0's address range, reserved but not mapped"};
    });
}

TEST(KernelFault, WildHostAddress) {
    void* page = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(page, MAP_FAILED);
    void* args[] = {&page};
    expectKernelFault(
        "write_at", args, mtiaErrorIllegalAddress,
        {"kernel 'write_at'", "SIGSEGV", "address " + pointerText(page), "not device memory"});
    munmap(page, 4096);
}

TEST(KernelFault, IntegerDivisionByZero) {
    ASSERT_OK(mtiaSetDevice(0));
    int* out = nullptr;
    ASSERT_OK(mtiaMalloc(reinterpret_cast<void**>(&out), sizeof(int)));
    int a = 1, b = 0;
    void* args[] = {&out, &a, &b};
    expectKernelFault("divide_i32", args, mtiaErrorLaunchFailure,
                      {"kernel 'divide_i32'", modulePath(), "SIGFPE"});
}

TEST(KernelFault, Abort) {
    expectKernelFault("calls_abort", nullptr, mtiaErrorLaunchFailure,
                      {"kernel 'calls_abort'", "SIGABRT"});
}

// --- signals outside kernels: each in a child that starts the runtime itself

namespace {

sigjmp_buf gOwnFault;
volatile sig_atomic_t gOwnHandlerRuns = 0;

void ownSegvHandler(int) {
    gOwnHandlerRuns = gOwnHandlerRuns + 1;
    siglongjmp(gOwnFault, 1);
}

// The application's own bug: a store to a page it may not touch. Not a null store: compilers and
// sanitizers treat that as undefined behaviour of their own (UBSan reports it, TSan's builds do not
// fault on it), where this must be a plain fault of the CPU.
__attribute__((noinline)) void ownFault() {
    static volatile int* const forbidden = static_cast<volatile int*>(
        mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    *forbidden = 1;
}

void segvHostFunc(void*) {
    ownFault();
}

// An application without a SIGSEGV handler of its own (a sanitizer's included): the default.
bool defaultSegv() {
    return signal(SIGSEGV, SIG_DFL) != SIG_ERR;
}

int childStatus(const std::function<int()>& body) {
    const pid_t pid = forkChild([&] {
        watchdog(60);
        return body();
    });
    KillOnExit guard{pid};
    return waitChild(pid);
}

}  // namespace

// The application's SIGSEGV handler, installed before the runtime starts, still runs for the
// application's own faults, also after a kernel faulted (the runtime's handler chains to it).
TEST(OwnSignals, ApplicationHandlerRunsForItsOwnFaults) {
    const int status = childStatus([] {
        struct sigaction sa {};
        sa.sa_handler = ownSegvHandler;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_NODEFER;
        if (sigaction(SIGSEGV, &sa, nullptr) != 0) return 10;
        // Starts the device's engines, and with them the runtime's handlers.
        if (!iotaWorks(0, 3)) return 11;
        if (sigsetjmp(gOwnFault, 1) == 0) ownFault();
        if (gOwnHandlerRuns != 1) return 12;
        // A kernel's fault is the device's, not the application's.
        void* null = nullptr;
        void* args[] = {&null};
        if (launch1(kernelOf("write_at"), args) != mtiaSuccess) return 13;
        if (mtiaDeviceSynchronize() != mtiaErrorIllegalAddress) return 14;
        if (gOwnHandlerRuns != 1) return 15;
        if (sigsetjmp(gOwnFault, 1) == 0) ownFault();
        return gOwnHandlerRuns == 2 ? 0 : 16;
    });
    EXPECT_EQ(status, 0) << "exit code 10+: see the child's steps; 128+n: killed by signal n";
}

// Without a handler of its own, an application fault still ends the process with SIGSEGV.
TEST(OwnSignals, ApplicationFaultStillKillsWithoutHandler) {
    const int status = childStatus([] {
        if (!defaultSegv()) return 10;
        if (!iotaWorks(0, 3)) return 11;
        ownFault();
        return 12;
    });
    EXPECT_EQ(status, 128 + SIGSEGV);
}

// A host function is the application's code: its fault is not the device's, it ends the process.
TEST(OwnSignals, HostFunctionFaultIsNotSwallowed) {
    const int status = childStatus([] {
        if (!defaultSegv()) return 10;
        if (!iotaWorks(0, 3)) return 11;
        if (mtiaLaunchHostFunc(nullptr, segvHostFunc, nullptr) != mtiaSuccess) return 12;
        (void)mtiaDeviceSynchronize();
        return 13;
    });
    EXPECT_EQ(status, 128 + SIGSEGV);
}

// --- mtiaDeviceReset on a healthy device

TEST(Reset, WaitsForQueuedWorkThenReleases) {
    ASSERT_OK(mtiaSetDevice(0));
    mtiaStream_t s = nullptr;
    ASSERT_OK(mtiaStreamCreate(&s));
    void* p = nullptr;
    ASSERT_OK(mtiaMalloc(&p, 1 << 20));
    static std::atomic<bool> ran{false};
    ASSERT_OK(mtiaLaunchHostFunc(
        s,
        [](void*) {
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            ran = true;
        },
        nullptr));
    ASSERT_OK(mtiaDeviceReset());
    EXPECT_TRUE(ran) << "the reset did not wait for the work queued before it";
    EXPECT_STATUS(mtiaErrorInvalidHandle, mtiaStreamQuery(s));
    EXPECT_STATUS(mtiaErrorInvalidValue, mtiaFree(p));
    size_t free = 0, total = 0;
    ASSERT_OK(mtiaMemGetInfo(&free, &total));
    EXPECT_EQ(free, total);
    EXPECT_TRUE(iotaWorks(0, 2));
}

TEST(Reset, ModulesStayLoaded) {
    ASSERT_OK(mtiaSetDevice(0));
    mtiaModule_t module = nullptr;
    ASSERT_OK(mtiaModuleLoad(&module, modulePath()));
    mtiaFunction_t iota = nullptr;
    ASSERT_OK(mtiaModuleGetFunction(&iota, module, "iota_i32"));
    ASSERT_OK(mtiaDeviceReset());
    int* out = nullptr;
    ASSERT_OK(mtiaMalloc(reinterpret_cast<void**>(&out), sizeof(int)));
    int base = 41;
    uint64_t n = 1;
    void* args[] = {&out, &base, &n};
    EXPECT_OK(launch1(iota, args));
    int host = 0;
    EXPECT_OK(mtiaMemcpy(&host, out, sizeof(int), mtiaMemcpyDeviceToHost));
    EXPECT_EQ(host, 41);
    EXPECT_OK(mtiaFree(out));
    EXPECT_OK(mtiaModuleUnload(module));
}

TEST(Reset, RefusedDuringCapture) {
    ASSERT_OK(mtiaSetDevice(0));
    mtiaStream_t s = nullptr;
    ASSERT_OK(mtiaStreamCreate(&s));
    ASSERT_OK(mtiaStreamBeginCapture(s, mtiaStreamCaptureModeThreadLocal));
    EXPECT_FAILS_SAYING(mtiaErrorStreamCaptureUnsupported, mtiaDeviceReset(), "capturing");
    mtiaGraph_t g = nullptr;
    EXPECT_OK(mtiaStreamEndCapture(s, &g));
    EXPECT_OK(mtiaGraphDestroy(g));
    EXPECT_OK(mtiaStreamSynchronize(s)) << "a refused reset released the stream";
    EXPECT_OK(mtiaStreamDestroy(s));
}

TEST(Reset, NotPermittedFromHostFunction) {
    ASSERT_OK(mtiaSetDevice(0));
    static mtiaError_t status = mtiaSuccess;
    ASSERT_OK(mtiaLaunchHostFunc(
        nullptr, [](void*) { status = mtiaDeviceReset(); }, nullptr));
    ASSERT_OK(mtiaDeviceSynchronize());
    EXPECT_EQ(status, mtiaErrorNotPermitted);
}

// The tuning pool's sequence: a worker opens its parent's memory through an IPC handle, a candidate
// faults, the worker resets its device and opens the same handle again.
TEST(ResetIpc, ImportedMemoryReopensAfterReset) {
    Channel handles;
    const pid_t child = forkChild([&] {
        watchdog(60);
        mtiaIpcMemHandle_t handle{};
        if (!handles.receive(handle)) return 10;
        if (mtiaSetDevice(0) != mtiaSuccess) return 11;
        void* shared = nullptr;
        if (mtiaIpcOpenMemHandle(&shared, handle, mtiaIpcMemLazyEnablePeerAccess) != mtiaSuccess)
            return 12;
        void* null = nullptr;
        void* args[] = {&null};
        if (launch1(kernelOf("write_at"), args) != mtiaSuccess) return 13;
        if (mtiaDeviceSynchronize() != mtiaErrorIllegalAddress) return 14;
        if (mtiaDeviceReset() != mtiaSuccess) return 15;
        if (mtiaIpcCloseMemHandle(shared) != mtiaErrorInvalidValue) return 16;  // closed by reset
        void* again = nullptr;
        if (mtiaIpcOpenMemHandle(&again, handle, mtiaIpcMemLazyEnablePeerAccess) != mtiaSuccess)
            return 17;
        unsigned char bytes[64] = {};
        if (mtiaMemcpy(bytes, again, sizeof bytes, mtiaMemcpyDeviceToHost) != mtiaSuccess)
            return 18;
        for (unsigned char b : bytes)
            if (b != 0x5a) return 19;
        if (mtiaIpcCloseMemHandle(again) != mtiaSuccess) return 20;
        return 0;
    });
    KillOnExit guard{child};
    ASSERT_OK(mtiaSetDevice(0));
    void* p = nullptr;
    ASSERT_OK(mtiaMalloc(&p, 2 << 20));
    ASSERT_OK(mtiaMemset(p, 0x5a, 2 << 20));
    mtiaIpcMemHandle_t handle{};
    ASSERT_OK(mtiaIpcGetMemHandle(&handle, p));
    ASSERT_TRUE(handles.send(handle));
    EXPECT_EQ(waitChild(child), 0) << "exit code 10+: see the child's steps";
    ASSERT_OK(mtiaFree(p));
}
