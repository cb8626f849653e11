// Kernels that fault (issue 20, item 1): a signal raised by a kernel becomes a sticky fault of its
// device, with the right code and a message that names the kernel; the process survives and the
// other device keeps working. Signals outside kernels keep their normal behaviour: the
// application's own handler runs, a host function's fault ends the process.
//
// Each KernelFault test leaves device 0 faulted, so each runs in a test entry of its own
// (--gtest_filter); the OwnSignals tests fork children that start the runtime themselves, so their
// entry must not have started it in the parent. MTIA_TEST_FAULT_KERNELS names the module
// (fault_kernels.c).
#include <gtest/gtest.h>
#include <mtia/mtia.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
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

// Launches kernel with args on device 0 and checks what a faulting kernel must give: the code from
// the call that observes it, a message with each needle, device 0's later work refused, device 1
// unaffected.
void expectKernelFault(const char* kernel, void** args, mtiaError_t want,
                       const std::vector<std::string>& needles) {
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
    ASSERT_OK(mtiaSetDevice(0));
    void* gone = nullptr;
    ASSERT_OK(mtiaMalloc(&gone, 8 << 20));
    ASSERT_OK(mtiaFree(gone));
    ASSERT_OK(mtiaEmptyCache());  // back to the device: reserved address range, nothing mapped
    void* target = static_cast<char*>(gone) + 4096;
    void* args[] = {&target};
    expectKernelFault("write_at", args, mtiaErrorIllegalAddress,
                      {"kernel 'write_at'", "SIGSEGV", "address " + pointerText(target),
                       "device 0's address range, reserved but not mapped"});
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

void segvHostFunc(void*) {
    *static_cast<volatile int*>(nullptr) = 1;
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
        if (sigsetjmp(gOwnFault, 1) == 0) *static_cast<volatile int*>(nullptr) = 1;
        if (gOwnHandlerRuns != 1) return 12;
        // A kernel's fault is the device's, not the application's.
        void* null = nullptr;
        void* args[] = {&null};
        if (launch1(kernelOf("write_at"), args) != mtiaSuccess) return 13;
        if (mtiaDeviceSynchronize() != mtiaErrorIllegalAddress) return 14;
        if (gOwnHandlerRuns != 1) return 15;
        if (sigsetjmp(gOwnFault, 1) == 0) *static_cast<volatile int*>(nullptr) = 1;
        return gOwnHandlerRuns == 2 ? 0 : 16;
    });
    EXPECT_EQ(status, 0) << "exit code 10+: see the child's steps; 128+n: killed by signal n";
}

// Without a handler of its own, an application fault still ends the process with SIGSEGV.
TEST(OwnSignals, ApplicationFaultStillKillsWithoutHandler) {
    const int status = childStatus([] {
        if (!iotaWorks(0, 3)) return 11;
        *static_cast<volatile int*>(nullptr) = 1;
        return 12;
    });
    EXPECT_EQ(status, 128 + SIGSEGV);
}

// A host function is the application's code: its fault is not the device's, it ends the process.
TEST(OwnSignals, HostFunctionFaultIsNotSwallowed) {
    const int status = childStatus([] {
        if (!iotaWorks(0, 3)) return 11;
        if (mtiaLaunchHostFunc(nullptr, segvHostFunc, nullptr) != mtiaSuccess) return 12;
        (void)mtiaDeviceSynchronize();
        return 13;
    });
    EXPECT_EQ(status, 128 + SIGSEGV);
}
