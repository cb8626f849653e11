// Sticky device faults and fault injection. Faults poison a device for the
// rest of the process, so the SimFault tests rerun SimFaultIsolated tests in
// child processes; the SimFaultEnv tests run as their own test entries with
// MTIA_SIM_FAULTS set (sim_faults_alloc, sim_faults_kernel, sim_faults_slow).
#include "sim_test_util.hpp"

#include <atomic>
#include <functional>
#include <stdexcept>
#include <vector>

using namespace simtest;

namespace {

class SimFaultIsolated : public SimTest {
protected:
    void SetUp() override {
        if (!isolatedChild())
            GTEST_SKIP() << "runs in a child process of the matching SimFault test";
        SimTest::SetUp();
    }
    // The device is faulted for good, with a message that contains every piece of what.
    void expectFaulted(int32_t dev, std::initializer_list<const char*> what) {
        EXPECT_NE(faultWord(dev), 0u)
            << "the shared fault word (driver ABI 1.7) still says healthy";
        EXPECT_EQ(d.deviceGetStatus(dev), mtiaErrorLaunchFailure);
        const std::string message = lastError();
        for (const char* piece : what) EXPECT_NE(message.find(piece), std::string::npos) << message;
    }
    // The device's fault word (driver ABI 1.7), read as the runtime reads it.
    uint32_t faultWord(int32_t dev) {
        const uint32_t* word = nullptr;
        EXPECT_EQ(d.deviceGetFaultWord(dev, &word), mtiaSuccess) << lastError();
        return word != nullptr ? __atomic_load_n(word, __ATOMIC_ACQUIRE) : 0xdeadu;
    }
    // Another device is unaffected: it still computes.
    void expectHealthy(int32_t dev) {
        EXPECT_EQ(faultWord(dev), 0u);
        EXPECT_EQ(d.deviceGetStatus(dev), mtiaSuccess);
        mtiaDrvQueue q = makeQueue(dev);
        DeviceBuffer buf(dev, 64);
        launch(q, "fill_f32", {2, 1, 1}, buf.f32(), 3.0f, uint64_t{16});
        EXPECT_EQ(finish(q), mtiaSuccess) << lastError();
        EXPECT_EQ(buf.f32()[15], 3.0f);
        EXPECT_EQ(d.queueDestroy(q), mtiaSuccess);
    }
};

}  // namespace

TEST(SimFault, IllegalAddressIsStickyOnThatDeviceOnly) {
    EXPECT_TRUE(runIsolated("SimFaultIsolated.IllegalAddressIsStickyOnThatDeviceOnly"));
}
TEST_F(SimFaultIsolated, IllegalAddressIsStickyOnThatDeviceOnly) {
    ASSERT_GE(deviceCount(), 2);
    mtiaDrvQueue q = makeQueue(0);
    mtiaDrvQueue other = makeQueue(0);
    std::vector<float> host(64, 0.0f);
    std::atomic<bool> ranAfterFault{false};
    std::function<void()> mark = [&] { ranAfterFault = true; };
    uint64_t stamp = 0;
    submitSleep(q, 20'000);
    launch(q, "fill_f32", {1, 1, 1}, host.data(), 1.0f, uint64_t{64});  // a host pointer
    submitHost(q, &mark);
    const uint64_t last = submitTimestamp(q, &stamp);
    // Work of another queue of the faulted device that waits on the faulted queue still completes.
    const uint64_t otherWait = submitWait(other, q, last);
    EXPECT_EQ(d.queueWait(q, last, MTIA_DRV_WAIT_SLEEP), mtiaErrorLaunchFailure);
    EXPECT_NE(lastError().find("fill_f32"), std::string::npos) << lastError();
    EXPECT_EQ(d.queueWait(other, otherWait, MTIA_DRV_WAIT_SPIN), mtiaErrorLaunchFailure);
    uint64_t completed = 0;
    EXPECT_EQ(d.queueQuery(q, &completed), mtiaSuccess);
    EXPECT_EQ(completed, last);          // everything completed ...
    EXPECT_FALSE(ranAfterFault.load());  // ... without running
    EXPECT_EQ(host[0], 0.0f);
    expectFaulted(0, {"device 0", "fill_f32", "illegal address", "dst="});
    // Sticky: new work is refused, synchronisation reports it.
    uint64_t seq = 0;
    EXPECT_EQ(launchStatus(q, builtin("fill_f32"), {1, 1, 1}, &seq, host.data(), 1.0f, uint64_t{1}),
              mtiaErrorLaunchFailure);
    EXPECT_NE(lastError().find("illegal address"), std::string::npos) << lastError();
    EXPECT_EQ(d.deviceSynchronize(0), mtiaErrorLaunchFailure);
    mtiaDrvQueue fresh = nullptr;
    EXPECT_EQ(d.queueCreate(0, 0, 0, &fresh),
              mtiaSuccess);  // handles still work; submissions do not
    mtiaDrvCommand c{};
    c.type = mtiaDrvCmdTimestamp;
    c.u.timestamp.out = &stamp;
    EXPECT_EQ(d.queueSubmit(fresh, &c, &seq), mtiaErrorLaunchFailure);
    // A queue of a healthy device may still wait on the faulted device's queue.
    mtiaDrvQueue healthy = makeQueue(1);
    EXPECT_EQ(d.queueWait(healthy, submitWait(healthy, q, last), MTIA_DRV_WAIT_SLEEP), mtiaSuccess);
    expectHealthy(1);
    for (mtiaDrvQueue x : {q, other, fresh, healthy}) EXPECT_EQ(d.queueDestroy(x), mtiaSuccess);
}

TEST(SimFault, DeviceResetClearsTheFault) {
    EXPECT_TRUE(runIsolated("SimFaultIsolated.DeviceResetClearsTheFault"));
}
// Driver ABI 1.8: deviceReset waits for the queues (drained at once: the device is faulted), then
// the status, the fault word and submissions are as on a fresh device; queues stay usable.
TEST_F(SimFaultIsolated, DeviceResetClearsTheFault) {
    ASSERT_NE(d.deviceReset, nullptr);
    mtiaDrvQueue q = makeQueue(0);
    std::vector<float> host(64, 0.0f);
    launch(q, "fill_f32", {1, 1, 1}, host.data(), 1.0f, uint64_t{64});  // a host pointer
    EXPECT_EQ(finish(q), mtiaErrorLaunchFailure);
    expectFaulted(0, {"fill_f32"});
    EXPECT_EQ(d.deviceReset(0), mtiaSuccess) << lastError();
    EXPECT_EQ(faultWord(0), 0u);
    EXPECT_EQ(d.deviceGetStatus(0), mtiaSuccess);
    DeviceBuffer buf(0, 64);
    launch(q, "fill_f32", {1, 1, 1}, buf.f32(), 4.0f, uint64_t{16});
    EXPECT_EQ(finish(q), mtiaSuccess) << lastError();
    EXPECT_EQ(buf.f32()[15], 4.0f);
    EXPECT_EQ(d.deviceReset(99), mtiaErrorInvalidDevice);
    EXPECT_EQ(d.queueDestroy(q), mtiaSuccess);
}

TEST(SimFault, FillOfHostMemoryFaults) {
    EXPECT_TRUE(runIsolated("SimFaultIsolated.FillOfHostMemoryFaults"));
}
TEST_F(SimFaultIsolated, FillOfHostMemoryFaults) {
    mtiaDrvQueue q = makeQueue(0);
    std::vector<unsigned char> host(256, 1);
    mtiaDrvCommand c{};
    c.type = mtiaDrvCmdFill;
    c.u.fill.dst = host.data();
    c.u.fill.size = host.size();
    submit(q, c);
    EXPECT_EQ(finish(q), mtiaErrorLaunchFailure);
    EXPECT_EQ(host[0], 1);
    expectFaulted(0, {"illegal address", "fill"});
    if (deviceCount() > 1) expectHealthy(1);
    EXPECT_EQ(d.queueDestroy(q), mtiaSuccess);
}

TEST(SimFault, CopyFromUnmappedDeviceMemoryFaults) {
    EXPECT_TRUE(runIsolated("SimFaultIsolated.CopyFromUnmappedDeviceMemoryFaults"));
}
TEST_F(SimFaultIsolated, CopyFromUnmappedDeviceMemoryFaults) {
    mtiaDrvQueue q = makeQueue(0);
    void* va = nullptr;
    ASSERT_EQ(d.vaReserve(0, kGran, 0, &va), mtiaSuccess);  // reserved but never mapped
    std::vector<unsigned char> host(256, 1);
    mtiaDrvCommand c{};
    c.type = mtiaDrvCmdCopy;
    c.u.copy.dst = host.data();
    c.u.copy.src = va;
    c.u.copy.size = host.size();
    submit(q, c);
    EXPECT_EQ(finish(q), mtiaErrorLaunchFailure);
    expectFaulted(0, {"illegal address", "copy src"});
    EXPECT_EQ(d.queueDestroy(q), mtiaSuccess);
}

TEST(SimFault, PeerMemoryWithoutAccessFaults) {
    EXPECT_TRUE(runIsolated("SimFaultIsolated.PeerMemoryWithoutAccessFaults"));
}
TEST_F(SimFaultIsolated, PeerMemoryWithoutAccessFaults) {
    ASSERT_GE(deviceCount(), 2);
    DeviceBuffer remote(1, kGran);
    mtiaDrvQueue q = makeQueue(0);
    launch(q, "scale_f32", {3, 1, 1}, remote.f32(), static_cast<const float*>(remote.f32()), 2.0f,
           uint64_t{100});
    EXPECT_EQ(finish(q), mtiaErrorLaunchFailure);
    expectFaulted(0, {"scale_f32", "illegal address"});
    expectHealthy(1);  // the memory's own device is fine
    EXPECT_EQ(d.queueDestroy(q), mtiaSuccess);
}

TEST(SimFault, ExceptionInAHostFunctionFaults) {
    EXPECT_TRUE(runIsolated("SimFaultIsolated.ExceptionInAHostFunctionFaults"));
}
TEST_F(SimFaultIsolated, ExceptionInAHostFunctionFaults) {
    mtiaDrvQueue q = makeQueue(0);
    std::function<void()> thrower = [] { throw std::runtime_error("host function broke"); };
    int after = 0;
    std::function<void()> count = [&] { after++; };
    submitSleep(q, 20'000);  // everything is queued before the fault
    submitHost(q, &thrower);
    submitHost(q, &count);
    EXPECT_EQ(finish(q), mtiaErrorLaunchFailure);
    EXPECT_EQ(after, 0);
    expectFaulted(0, {"host function", "host function broke"});
    if (deviceCount() > 1) expectHealthy(1);
    EXPECT_EQ(d.queueDestroy(q), mtiaSuccess);
}

TEST(SimFault, ModuleKernelReportsAFault) {
    if (std::getenv("MTIA_TEST_MODULE") == nullptr) GTEST_SKIP() << "MTIA_TEST_MODULE is not set";
    EXPECT_TRUE(runIsolated("SimFaultIsolated.ModuleKernelReportsAFault"));
}
TEST_F(SimFaultIsolated, ModuleKernelReportsAFault) {
    mtiaDrvModule module = nullptr;
    ASSERT_EQ(d.moduleLoad(std::getenv("MTIA_TEST_MODULE"), &module), mtiaSuccess) << lastError();
    mtiaDrvKernel k = nullptr;
    ASSERT_EQ(d.moduleGetKernel(module, "test_fault", &k), mtiaSuccess);
    mtiaDrvQueue q = makeQueue(0);
    const mtiaDrvCommand c = kernelCommand(k, {4, 1, 1}, nullptr);
    submit(q, c);
    EXPECT_EQ(finish(q), mtiaErrorLaunchFailure);
    expectFaulted(0, {"test_fault", "custom failure 42"});
    EXPECT_EQ(d.queueDestroy(q), mtiaSuccess);
    EXPECT_EQ(d.moduleUnload(module), mtiaSuccess);
}

// ---- MTIA_SIM_FAULTS runs ----

TEST(SimFaultEnv, AllocSecondCreateFails) {
    if (!envIs("MTIA_SIM_FAULTS", "alloc=2"))
        GTEST_SKIP() << "runs as test sim_faults_alloc (MTIA_SIM_FAULTS=alloc=2)";
    const mtiaDriverOps& d = table();
    ASSERT_EQ(d.init(0), mtiaSuccess);
    int32_t devices = 0;
    ASSERT_EQ(d.deviceGetCount(&devices), mtiaSuccess);
    mtiaDrvMem a = nullptr, b = nullptr, c = nullptr;
    uint64_t free0 = 0, free1 = 0, total = 0;
    ASSERT_EQ(d.memGetInfo(devices - 1, &free0, &total), mtiaSuccess);
    EXPECT_EQ(d.memCreate(0, kGran, &a), mtiaSuccess);
    // Counted across devices: the second creation of the process fails, whichever device it is for.
    EXPECT_EQ(d.memCreate(devices - 1, kGran, &b), mtiaErrorMemoryAllocation);
    EXPECT_NE(std::string(d.lastErrorMessage()).find("injected fault"), std::string::npos)
        << d.lastErrorMessage();
    EXPECT_EQ(b, nullptr);
    ASSERT_EQ(d.memGetInfo(devices - 1, &free1, &total), mtiaSuccess);
    EXPECT_EQ(free1, free0);  // nothing was taken
    EXPECT_EQ(d.memCreate(devices - 1, kGran, &c), mtiaSuccess);
    EXPECT_EQ(d.memRelease(a), mtiaSuccess);
    EXPECT_EQ(d.memRelease(c), mtiaSuccess);
}

TEST(SimFaultEnv, KernelSecondLaunchFaults) {
    if (!envIs("MTIA_SIM_FAULTS", "kernel=scale_f32@2")) {
        GTEST_SKIP() << "runs as test sim_faults_kernel (MTIA_SIM_FAULTS=kernel=scale_f32@2)";
    }
    const mtiaDriverOps& d = table();
    ASSERT_EQ(d.init(0), mtiaSuccess);
    mtiaDrvQueue q = makeQueue(0);
    DeviceBuffer buf(0, 64);
    const auto* in = static_cast<const float*>(buf.f32());
    launch(q, "fill_f32", {1, 1, 1}, buf.f32(), 1.0f, uint64_t{16});
    launch(q, "scale_f32", {1, 1, 1}, buf.f32(), in, 2.0f, uint64_t{16});  // first: runs
    ASSERT_EQ(finish(q), mtiaSuccess) << d.lastErrorMessage();
    EXPECT_EQ(buf.f32()[0], 2.0f);
    launch(q, "scale_f32", {1, 1, 1}, buf.f32(), in, 2.0f, uint64_t{16});  // second: faults
    EXPECT_EQ(finish(q), mtiaErrorLaunchFailure);
    EXPECT_EQ(buf.f32()[0], 2.0f);
    EXPECT_EQ(d.deviceGetStatus(0), mtiaErrorLaunchFailure);
    const std::string message = d.lastErrorMessage();
    EXPECT_NE(message.find("scale_f32"), std::string::npos) << message;
    EXPECT_NE(message.find("injected fault"), std::string::npos) << message;
    int32_t devices = 0;
    ASSERT_EQ(d.deviceGetCount(&devices), mtiaSuccess);
    if (devices > 1) {
        // The third launch, on another device, is not picked.
        EXPECT_EQ(d.deviceGetStatus(1), mtiaSuccess);
        mtiaDrvQueue q1 = makeQueue(1);
        DeviceBuffer other(1, 64);
        launch(q1, "fill_f32", {1, 1, 1}, other.f32(), 1.0f, uint64_t{16});
        launch(q1, "scale_f32", {1, 1, 1}, other.f32(), static_cast<const float*>(other.f32()),
               3.0f, uint64_t{16});
        EXPECT_EQ(finish(q1), mtiaSuccess) << d.lastErrorMessage();
        EXPECT_EQ(other.f32()[0], 3.0f);
        EXPECT_EQ(d.queueDestroy(q1), mtiaSuccess);
    }
    EXPECT_EQ(d.queueDestroy(q), mtiaSuccess);
}

TEST(SimFaultEnv, SlowQueueTakesTheDelay) {
    if (!envIs("MTIA_SIM_FAULTS", "slow=0.1:20000")) {
        GTEST_SKIP() << "runs as test sim_faults_slow (MTIA_SIM_FAULTS=slow=0.1:20000)";
    }
    const mtiaDriverOps& d = table();
    ASSERT_EQ(d.init(0), mtiaSuccess);
    mtiaDrvQueue fast = makeQueue(0);  // queue 0 of device 0
    mtiaDrvQueue slow = makeQueue(0);  // queue 1 of device 0: slowed by 20 ms per command
    uint64_t f0 = 0, f1 = 0, s0 = 0, s1 = 0;
    submitTimestamp(fast, &f0);
    submitTimestamp(fast, &f1);
    submitTimestamp(slow, &s0);
    submitTimestamp(slow, &s1);
    ASSERT_EQ(finish(fast), mtiaSuccess);
    ASSERT_EQ(finish(slow), mtiaSuccess);
    EXPECT_GE(s1 - s0, 20'000'000u);
    EXPECT_LT(f1 - f0, 20'000'000u);
    EXPECT_EQ(d.queueDestroy(fast), mtiaSuccess);
    EXPECT_EQ(d.queueDestroy(slow), mtiaSuccess);
}
