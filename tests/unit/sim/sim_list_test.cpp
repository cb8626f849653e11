// Command lists (driver ABI 1.2): creation and its refusals, runs as one
// command, re-submission, concurrent runs of one list on several queues,
// destruction while runs are queued, modules kept loaded, and faults inside a
// list (in child processes, like sim_fault_test.cpp; the MTIA_SIM_FAULTS runs
// are the test entries sim_faults_kernel_list and sim_faults_slow_list).
#include "sim_test_util.hpp"

#include <atomic>
#include <cstddef>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

using namespace simtest;

namespace {

mtiaDrvCommand fillCommand(void* dst, uint64_t size, uint32_t value) {
    mtiaDrvCommand c{};
    c.type = mtiaDrvCmdFill;
    c.u.fill.dst = dst;
    c.u.fill.size = size;
    c.u.fill.value = value;
    return c;
}

mtiaDrvCommand copyCommand(void* dst, const void* src, uint64_t size) {
    mtiaDrvCommand c{};
    c.type = mtiaDrvCmdCopy;
    c.u.copy.dst = dst;
    c.u.copy.src = src;
    c.u.copy.size = size;
    return c;
}

mtiaDrvCommand hostCommand(std::function<void()>* fn) {
    mtiaDrvCommand c{};
    c.type = mtiaDrvCmdHostFunc;
    c.u.hostFunc.fn = [](void* p) { (*static_cast<std::function<void()>*>(p))(); };
    c.u.hostFunc.userData = fn;
    return c;
}

mtiaDrvCommand timestampCommand(uint64_t* out) {
    mtiaDrvCommand c{};
    c.type = mtiaDrvCmdTimestamp;
    c.u.timestamp.out = out;
    return c;
}

mtiaDrvCommand listCommand(mtiaDrvCommandList list) {
    mtiaDrvCommand c{};
    c.type = mtiaDrvCmdList;
    c.u.list.list = list;
    return c;
}

// Argument values of test_module.c's test_scribble.
struct ScribbleArgs {
    ScribbleArgs(const ScribbleArgs&) = delete;  // args points into the object
    ScribbleArgs& operator=(const ScribbleArgs&) = delete;
    uint64_t* counts;
    uint32_t slot;
    uint32_t pad[16];
    void* args[3] = {&counts, &slot, pad};
    ScribbleArgs(uint64_t* c, uint32_t s) : counts(c), slot(s) {
        for (uint32_t i = 0; i < 16; ++i) pad[i] = i + s;
    }
};

class SimList : public SimTest {
protected:
    void SetUp() override {
        SimTest::SetUp();
        q = makeQueue(0);
    }
    void TearDown() override {
        if (q != nullptr) {
            EXPECT_EQ(finish(q), mtiaSuccess) << lastError();
            EXPECT_EQ(d.queueDestroy(q), mtiaSuccess);
        }
    }
    mtiaDrvCommandList create(const std::vector<mtiaDrvCommand>& cmds, int32_t dev = 0) {
        mtiaDrvCommandList list = nullptr;
        EXPECT_EQ(d.commandListCreate(dev, cmds.data(), cmds.size(), &list), mtiaSuccess)
            << lastError();
        return list;
    }
    // The status of creating a list of cmds; on failure the message must contain every piece of
    // what.
    mtiaError_t refused(const std::vector<mtiaDrvCommand>& cmds,
                        std::initializer_list<const char*> what) {
        mtiaDrvCommandList list = nullptr;
        const mtiaError_t err = d.commandListCreate(0, cmds.data(), cmds.size(), &list);
        EXPECT_EQ(list, nullptr);
        const std::string message = lastError();
        for (const char* piece : what) EXPECT_NE(message.find(piece), std::string::npos) << message;
        return err;
    }
    mtiaDrvQueue q = nullptr;
};

// Loads MTIA_TEST_MODULE (test_module.c) for tests of module kernels in lists.
class SimListModule : public SimList {
protected:
    void SetUp() override {
        const char* path = std::getenv("MTIA_TEST_MODULE");
        if (path == nullptr)
            GTEST_SKIP() << "MTIA_TEST_MODULE is not set (the test registration sets it)";
        SimList::SetUp();
        ASSERT_EQ(d.moduleLoad(path, &module), mtiaSuccess) << lastError();
    }
    void TearDown() override {
        SimList::TearDown();
        if (module != nullptr) {
            EXPECT_EQ(d.moduleUnload(module), mtiaSuccess);
        }
    }
    mtiaDrvKernel kernel(const char* name) {
        mtiaDrvKernel k = nullptr;
        EXPECT_EQ(d.moduleGetKernel(module, name, &k), mtiaSuccess) << lastError();
        return k;
    }
    mtiaDrvModule module = nullptr;
};

}  // namespace

TEST(SimListTable, DriverReports12WithBothEntries) {
    const mtiaDriverOps& d = table();
    // 1.3: memReportAllocated, 1.4: IPC, 1.5: ipcMemSize, 1.6: the machine described without init,
    // 1.7: the shared fault and allocated words, 1.8: deviceReset
    EXPECT_EQ(d.version, MTIA_DRIVER_MAKE_API_VERSION(1u, 8u));
    EXPECT_NE(d.deviceReset, nullptr);
    EXPECT_NE(d.machineGetSpec, nullptr);
    EXPECT_NE(d.machineDescribeDevice, nullptr);
    EXPECT_NE(d.deviceGetFaultWord, nullptr);
    EXPECT_NE(d.memGetAllocatedWords, nullptr);
    EXPECT_NE(d.ipcMemExport, nullptr);
    EXPECT_NE(d.ipcEventWait, nullptr);
    EXPECT_NE(d.ipcMemSize, nullptr);  // driver ABI 1.5
    EXPECT_EQ(d.structSize, sizeof(mtiaDriverOps));
    EXPECT_NE(d.memReportAllocated, nullptr);
    EXPECT_NE(d.commandListCreate, nullptr);
    EXPECT_NE(d.commandListDestroy, nullptr);
    // A 1.1-sized request gets the 1.1 entries only.
    mtiaDriverOps old{};
    old.structSize = offsetof(mtiaDriverOps, commandListCreate);
    ASSERT_EQ(mtiaSimDriverGetOps(MTIA_DRIVER_MAKE_API_VERSION(1u, 1u), &old), mtiaSuccess);
    EXPECT_EQ(old.structSize, offsetof(mtiaDriverOps, commandListCreate));
    EXPECT_NE(old.queueGetCounts, nullptr);
    EXPECT_EQ(old.commandListCreate, nullptr);
}

TEST_F(SimList, CommandsRunInOrderAsOneCommand) {
    DeviceBuffer buf(0, kGran);
    float* a = buf.f32();
    float* b = buf.f32() + 1024;
    std::vector<int> order;
    std::vector<std::function<void()>> fns;
    for (int i = 0; i < 3; ++i)
        fns.emplace_back([&order, &buf, i] {
            order.push_back(i);
            // Each host function sees what the commands before it did.
            if (i == 1) {
                EXPECT_EQ(buf.f32()[1024 + 15], 6.0f);
            }
        });
    uint64_t stamps[3] = {};
    float value = 3.0f;
    uint64_t n = 16;
    void* fillArgs[] = {&a, &value, &n};
    const float* in = b;
    float factor = 2.0f;
    void* scaleArgs[] = {&b, &in, &factor, &n};
    const std::vector<mtiaDrvCommand> cmds = {
        timestampCommand(&stamps[0]),
        fillCommand(a, 64 * sizeof(float), 0),
        kernelCommand(builtin("fill_f32"), {1, 1, 1}, fillArgs),
        hostCommand(&fns[0]),
        copyCommand(b, a, 16 * sizeof(float)),
        kernelCommand(builtin("scale_f32"), {2, 1, 1}, scaleArgs),
        timestampCommand(&stamps[1]),
        hostCommand(&fns[1]),
        fillCommand(a, 16 * sizeof(float), 0),
        hostCommand(&fns[2]),
        timestampCommand(&stamps[2]),
    };
    mtiaDrvCommandList list = create(cmds);
    ASSERT_NE(list, nullptr);
    value = -1.0f;  // argument values were copied at creation
    uint64_t earlier = 0;
    const uint64_t before = submitTimestamp(q, &earlier);
    const uint64_t seq = submit(q, listCommand(list));
    EXPECT_EQ(seq, before + 1);  // one command number for the whole list
    ASSERT_EQ(d.queueWait(q, seq, MTIA_DRV_WAIT_SLEEP), mtiaSuccess) << lastError();
    uint64_t submitted = 0, completed = 0;
    ASSERT_EQ(d.queueGetCounts(q, &submitted, &completed), mtiaSuccess);
    EXPECT_EQ(submitted, seq);
    EXPECT_EQ(completed, seq);
    EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
    EXPECT_EQ(b[0], 6.0f);
    EXPECT_EQ(b[15], 6.0f);
    EXPECT_EQ(a[0], 0.0f);
    EXPECT_LE(earlier, stamps[0]);
    EXPECT_LE(stamps[0], stamps[1]);
    EXPECT_LE(stamps[1], stamps[2]);
    EXPECT_EQ(d.commandListDestroy(list), mtiaSuccess);
}

TEST_F(SimList, ResubmittedManyTimes) {
    std::atomic<int> calls{0};
    std::function<void()> count = [&] { calls.fetch_add(1, std::memory_order_relaxed); };
    DeviceBuffer buf(0, 64);
    float* p = buf.f32();
    float value = 5.0f;
    uint64_t n = 16;
    void* fillArgs[] = {&p, &value, &n};
    mtiaDrvCommandList list =
        create({hostCommand(&count), kernelCommand(builtin("fill_f32"), {1, 1, 1}, fillArgs),
                hostCommand(&count)});
    constexpr int kRuns = 2000;
    uint64_t first = 0, last = 0;
    for (int i = 0; i < kRuns; ++i) {
        last = submit(q, listCommand(list));
        if (i == 0) first = last;
    }
    EXPECT_EQ(last - first, static_cast<uint64_t>(kRuns - 1));
    ASSERT_EQ(d.queueWait(q, last, MTIA_DRV_WAIT_SPIN), mtiaSuccess) << lastError();
    EXPECT_EQ(calls.load(), 2 * kRuns);
    EXPECT_EQ(buf.f32()[15], 5.0f);
    EXPECT_EQ(d.commandListDestroy(list), mtiaSuccess);
}

TEST_F(SimListModule, ConcurrentRunsOnFourQueuesGetTheirOwnArguments) {
    // test_scribble overwrites its argument values after checking them: were they shared between
    // runs, later runs would fault (and TSan would report the concurrent writes).
    constexpr uint32_t kLaunches = 4;
    DeviceBuffer counts(0, 64 * sizeof(uint64_t));
    std::memset(counts.data(), 0, 64 * sizeof(uint64_t));
    auto* c = static_cast<uint64_t*>(counts.data());
    std::deque<ScribbleArgs> args;
    std::vector<mtiaDrvCommand> cmds;
    for (uint32_t i = 0; i < kLaunches; ++i) {
        args.emplace_back(c, i);
        cmds.push_back(kernelCommand(kernel("test_scribble"), {1, 1, 1}, args.back().args));
    }
    mtiaDrvCommandList list = create(cmds);
    constexpr int kQueues = 4;
    constexpr int kRuns = 300;
    std::vector<mtiaDrvQueue> queues;
    for (int i = 0; i < kQueues; ++i) queues.push_back(makeQueue(0));
    std::vector<std::thread> threads;
    for (int t = 0; t < kQueues; ++t) {
        threads.emplace_back([&, t] {
            for (int r = 0; r < kRuns; ++r)
                submit(queues[static_cast<size_t>(t)], listCommand(list));
        });
    }
    for (std::thread& t : threads) t.join();
    for (mtiaDrvQueue x : queues) {
        EXPECT_EQ(finish(x), mtiaSuccess) << lastError();
        EXPECT_EQ(d.queueDestroy(x), mtiaSuccess);
    }
    for (uint32_t i = 0; i < kLaunches; ++i) {
        EXPECT_EQ(__atomic_load_n(c + i, __ATOMIC_RELAXED), static_cast<uint64_t>(kQueues * kRuns))
            << i;
    }
    EXPECT_EQ(d.commandListDestroy(list), mtiaSuccess);
}

TEST_F(SimList, DestroyWhileRunsAreQueued) {
    std::atomic<int> calls{0};
    std::function<void()> count = [&] { calls.fetch_add(1); };
    mtiaDrvCommandList list = create({hostCommand(&count), hostCommand(&count)});
    submitSleep(q, 20'000);
    for (int i = 0; i < 10; ++i) submit(q, listCommand(list));
    ASSERT_EQ(d.commandListDestroy(list), mtiaSuccess);  // the queued runs hold the list
    ASSERT_EQ(finish(q), mtiaSuccess) << lastError();
    EXPECT_EQ(calls.load(), 20);
    uint64_t seq = 0;
    const mtiaDrvCommand c = listCommand(list);
    EXPECT_EQ(d.queueSubmit(q, &c, &seq), mtiaErrorInvalidHandle);
    EXPECT_NE(lastError().find("not a live command list"), std::string::npos) << lastError();
    EXPECT_EQ(d.commandListDestroy(list), mtiaErrorInvalidHandle);
}

TEST_F(SimList, RefusedInputsNameTheCommand) {
    uint64_t stamp = 0;
    const mtiaDrvCommand ok = timestampCommand(&stamp);
    mtiaDrvCommandList list = nullptr;
    EXPECT_EQ(d.commandListCreate(0, &ok, 0, &list), mtiaErrorInvalidValue);
    EXPECT_NE(lastError().find("count"), std::string::npos) << lastError();
    EXPECT_EQ(d.commandListCreate(0, nullptr, 1, &list), mtiaErrorInvalidValue);
    EXPECT_EQ(d.commandListCreate(0, &ok, 1, nullptr), mtiaErrorInvalidValue);
    EXPECT_EQ(d.commandListCreate(-1, &ok, 1, &list), mtiaErrorInvalidDevice);
    EXPECT_EQ(d.commandListCreate(deviceCount(), &ok, 1, &list), mtiaErrorInvalidDevice);
    EXPECT_EQ(list, nullptr);

    mtiaDrvCommand wait{};
    wait.type = mtiaDrvCmdWait;
    wait.u.wait.queue = q;
    EXPECT_EQ(refused({ok, ok, wait}, {"commandListCreate: cmds[2]", "wait"}),
              mtiaErrorInvalidValue);
    mtiaDrvCommandList inner = create({ok});
    EXPECT_EQ(refused({ok, listCommand(inner)}, {"cmds[1]", "list"}), mtiaErrorInvalidValue);
    int notAKernel = 0;
    const mtiaDrvCommand badKernel =
        kernelCommand(reinterpret_cast<mtiaDrvKernel>(&notAKernel), {1, 1, 1}, nullptr);
    EXPECT_EQ(refused({ok, ok, ok, badKernel}, {"cmds[3]", "not a kernel"}),
              mtiaErrorInvalidHandle);
    const mtiaDrvCommand zeroGrid = kernelCommand(builtin("noop"), {0, 1, 1}, nullptr);
    EXPECT_EQ(refused({zeroGrid, ok}, {"cmds[0]", "grid"}), mtiaErrorInvalidValue);
    void* withNull[] = {nullptr, nullptr, nullptr};
    const mtiaDrvCommand nullArg = kernelCommand(builtin("fill_f32"), {1, 1, 1}, withNull);
    EXPECT_EQ(refused({ok, nullArg}, {"cmds[1]", "args[0]"}), mtiaErrorInvalidValue);
    char bytes[64];
    EXPECT_EQ(refused({ok, copyCommand(bytes + 8, bytes, 16)}, {"cmds[1]", "overlap"}),
              mtiaErrorInvalidValue);
    EXPECT_EQ(refused({ok, timestampCommand(nullptr)}, {"cmds[1]", "timestamp.out"}),
              mtiaErrorInvalidValue);
    mtiaDrvCommand unknown{};
    const int32_t type = 99;
    std::memcpy(&unknown.type, &type, sizeof(type));
    EXPECT_EQ(refused({unknown}, {"cmds[0]", "unknown command type 99"}), mtiaErrorInvalidValue);
    // Single submissions keep their messages.
    uint64_t seq = 0;
    EXPECT_EQ(d.queueSubmit(q, &zeroGrid, &seq), mtiaErrorInvalidValue);
    EXPECT_EQ(lastError().rfind("queueSubmit: kernel 'noop'", 0), 0u) << lastError();

    // Submission: a list of another device, a handle that is no list.
    if (deviceCount() >= 2) {
        mtiaDrvQueue q1 = makeQueue(1);
        const mtiaDrvCommand run = listCommand(inner);
        EXPECT_EQ(d.queueSubmit(q1, &run, &seq), mtiaErrorInvalidValue);
        EXPECT_NE(lastError().find("device 0"), std::string::npos) << lastError();
        mtiaDrvCommandList onOne = create({ok}, 1);
        const mtiaDrvCommand runOne = listCommand(onOne);
        EXPECT_EQ(d.queueSubmit(q, &runOne, &seq), mtiaErrorInvalidValue);
        EXPECT_EQ(d.queueSubmit(q1, &runOne, &seq), mtiaSuccess) << lastError();
        EXPECT_EQ(finish(q1), mtiaSuccess);
        EXPECT_EQ(d.commandListDestroy(onOne), mtiaSuccess);
        EXPECT_EQ(d.queueDestroy(q1), mtiaSuccess);
    }
    const mtiaDrvCommand notAList = listCommand(reinterpret_cast<mtiaDrvCommandList>(&notAKernel));
    EXPECT_EQ(d.queueSubmit(q, &notAList, &seq), mtiaErrorInvalidHandle);
    const mtiaDrvCommand nullList = listCommand(nullptr);
    EXPECT_EQ(d.queueSubmit(q, &nullList, &seq), mtiaErrorInvalidHandle);
    EXPECT_EQ(d.commandListDestroy(nullptr), mtiaErrorInvalidHandle);
    // Nothing of the above was queued.
    uint64_t submitted = 0, completed = 0;
    ASSERT_EQ(d.queueGetCounts(q, &submitted, &completed), mtiaSuccess);
    EXPECT_EQ(submitted, 0u);
    EXPECT_EQ(d.commandListDestroy(inner), mtiaSuccess);
}

TEST_F(SimListModule, ModuleStaysLoadedWhileAListHoldsItsKernel) {
    DeviceBuffer counts(0, 64 * sizeof(uint64_t));
    std::memset(counts.data(), 0, 64 * sizeof(uint64_t));
    auto* c = static_cast<uint64_t*>(counts.data());
    ScribbleArgs args(c, 5);
    mtiaDrvKernel k = kernel("test_scribble");
    const mtiaDrvCommand launchCmd = kernelCommand(k, {1, 1, 1}, args.args);
    mtiaDrvCommandList list = create({launchCmd});
    ASSERT_EQ(d.moduleUnload(module), mtiaSuccess);
    module = nullptr;
    // The kernel handle died with the module's handle, the list still runs its copy.
    mtiaDrvCommandList again = nullptr;
    EXPECT_EQ(d.commandListCreate(0, &launchCmd, 1, &again), mtiaErrorInvalidHandle);
    EXPECT_NE(lastError().find("cmds[0]"), std::string::npos) << lastError();
    for (int i = 0; i < 3; ++i) submit(q, listCommand(list));
    ASSERT_EQ(d.commandListDestroy(list), mtiaSuccess);  // queued runs keep list and module alive
    ASSERT_EQ(finish(q), mtiaSuccess) << lastError();
    EXPECT_EQ(c[5], 3u);
}

// ---- faults inside a list (each in a child process: a fault poisons the device) ----

namespace {

class SimListIsolated : public SimList {
protected:
    void SetUp() override {
        if (!isolatedChild())
            GTEST_SKIP() << "runs in a child process of the matching SimListFault test";
        SimList::SetUp();
    }
    void TearDown() override {
        if (q != nullptr) {
            finish(q);
            EXPECT_EQ(d.queueDestroy(q), mtiaSuccess);
            q = nullptr;
        }
    }
};

}  // namespace

TEST(SimListFault, DeviceFaultStopsTheRestOfTheList) {
    EXPECT_TRUE(runIsolated("SimListIsolated.DeviceFaultStopsTheRestOfTheList"));
}
TEST_F(SimListIsolated, DeviceFaultStopsTheRestOfTheList) {
    DeviceBuffer buf(0, 64);
    std::vector<float> host(16, 0.0f);
    float* dev = buf.f32();
    float* bad = host.data();  // a host pointer: fill_f32 faults
    float value = 2.0f;
    uint64_t n = 16;
    void* good[] = {&dev, &value, &n};
    void* faulting[] = {&bad, &value, &n};
    std::atomic<int> ran{0};
    std::function<void()> mark = [&] { ran++; };
    uint64_t stamps[2] = {};
    mtiaDrvCommandList list = create({
        hostCommand(&mark),
        kernelCommand(builtin("fill_f32"), {1, 1, 1}, faulting),
        hostCommand(&mark),
        timestampCommand(&stamps[0]),
        kernelCommand(builtin("fill_f32"), {1, 1, 1}, good),
        timestampCommand(&stamps[1]),
    });
    const uint64_t seq = submit(q, listCommand(list));
    EXPECT_EQ(d.queueWait(q, seq, MTIA_DRV_WAIT_SLEEP), mtiaErrorLaunchFailure);
    uint64_t completed = 0;
    EXPECT_EQ(d.queueQuery(q, &completed), mtiaSuccess);
    EXPECT_EQ(completed, seq);
    EXPECT_EQ(ran.load(), 1);  // only the host function before the fault
    EXPECT_EQ(host[0], 0.0f);
    EXPECT_EQ(buf.f32()[0], 0.0f);  // the later launch did not run
    EXPECT_NE(stamps[0], 0u);       // timestamps are still written
    EXPECT_LE(stamps[0], stamps[1]);
    EXPECT_EQ(d.deviceGetStatus(0), mtiaErrorLaunchFailure);
    const std::string message = lastError();
    EXPECT_NE(message.find("fill_f32"), std::string::npos) << message;
    EXPECT_NE(message.find("command 1 of a list"), std::string::npos) << message;
    // The sticky fault refuses new runs; destroying the list still works.
    uint64_t next = 0;
    const mtiaDrvCommand run = listCommand(list);
    EXPECT_EQ(d.queueSubmit(q, &run, &next), mtiaErrorLaunchFailure);
    EXPECT_EQ(d.commandListDestroy(list), mtiaSuccess);
}

// ---- MTIA_SIM_FAULTS=kernel=scale_f32@3 (test entry sim_faults_kernel_list) ----

TEST(SimListFaultEnv, KernelFaultIsDecidedPerSubmission) {
    if (!envIs("MTIA_SIM_FAULTS", "kernel=scale_f32@3")) {
        GTEST_SKIP() << "runs as test sim_faults_kernel_list (MTIA_SIM_FAULTS=kernel=scale_f32@3)";
    }
    const mtiaDriverOps& d = table();
    ASSERT_EQ(d.init(0), mtiaSuccess);
    mtiaDrvQueue q = makeQueue(0);
    DeviceBuffer buf(0, 64);
    float* p = buf.f32();
    const float* in = buf.f32();
    float one = 1.0f, two = 2.0f;
    uint64_t n = 16;
    void* fillArgs[] = {&p, &one, &n};
    void* scaleArgs[] = {&p, &in, &two, &n};
    std::atomic<int> ran{0};
    std::function<void()> mark = [&] { ran++; };
    uint64_t stamp = 0;
    const std::vector<mtiaDrvCommand> cmds = {
        kernelCommand(builtin("fill_f32"), {1, 1, 1}, fillArgs),
        kernelCommand(builtin("scale_f32"), {1, 1, 1}, scaleArgs),
        hostCommand(&mark),
        kernelCommand(builtin("scale_f32"), {1, 1, 1}, scaleArgs),
        timestampCommand(&stamp),
    };
    mtiaDrvCommandList list = nullptr;
    ASSERT_EQ(d.commandListCreate(0, cmds.data(), cmds.size(), &list), mtiaSuccess)
        << d.lastErrorMessage();
    // Launches 1 and 2 of scale_f32: the first run is clean.
    submit(q, listCommand(list));
    ASSERT_EQ(finish(q), mtiaSuccess) << d.lastErrorMessage();
    EXPECT_EQ(buf.f32()[0], 4.0f);
    EXPECT_EQ(ran.load(), 1);
    // Launch 3 is the second run's first scale_f32 (its command 1): nothing after it runs.
    stamp = 0;
    submit(q, listCommand(list));
    EXPECT_EQ(finish(q), mtiaErrorLaunchFailure);
    EXPECT_EQ(buf.f32()[0], 1.0f);  // the fill before it ran
    EXPECT_EQ(ran.load(), 1);
    EXPECT_NE(stamp, 0u);
    EXPECT_EQ(d.deviceGetStatus(0), mtiaErrorLaunchFailure);
    const std::string message = d.lastErrorMessage();
    EXPECT_NE(message.find("scale_f32"), std::string::npos) << message;
    EXPECT_NE(message.find("injected fault"), std::string::npos) << message;
    EXPECT_NE(message.find("command 1 of a list"), std::string::npos) << message;
    EXPECT_EQ(d.commandListDestroy(list), mtiaSuccess);
    EXPECT_EQ(d.queueDestroy(q), mtiaSuccess);
}

// ---- MTIA_SIM_FAULTS=slow=0:5000 (test entry sim_faults_slow_list) ----

TEST(SimListFaultEnv, SlowQueueDelaysEachCommandOfAList) {
    if (!envIs("MTIA_SIM_FAULTS", "slow=0:5000")) {
        GTEST_SKIP() << "runs as test sim_faults_slow_list (MTIA_SIM_FAULTS=slow=0:5000)";
    }
    const mtiaDriverOps& d = table();
    ASSERT_EQ(d.init(0), mtiaSuccess);
    mtiaDrvQueue q = makeQueue(0);  // every queue of device 0 takes 5 ms per command
    uint64_t stamps[3] = {};
    const std::vector<mtiaDrvCommand> cmds = {
        timestampCommand(&stamps[0]), timestampCommand(&stamps[1]), timestampCommand(&stamps[2])};
    mtiaDrvCommandList list = nullptr;
    ASSERT_EQ(d.commandListCreate(0, cmds.data(), cmds.size(), &list), mtiaSuccess)
        << d.lastErrorMessage();
    submit(q, listCommand(list));
    ASSERT_EQ(finish(q), mtiaSuccess) << d.lastErrorMessage();
    EXPECT_GE(stamps[1] - stamps[0], 5'000'000u);
    EXPECT_GE(stamps[2] - stamps[1], 5'000'000u);
    EXPECT_EQ(d.commandListDestroy(list), mtiaSuccess);
    EXPECT_EQ(d.queueDestroy(q), mtiaSuccess);
}
