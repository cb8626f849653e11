#include "core/error.hpp"
#include "platform/driver/driver.hpp"
#include "platform/driver/loader.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <string>

namespace mtia::driver {
namespace {

// A fake driver whose table the tests bend in different ways.
mtiaError_t fakeInit(uint32_t) {
    return mtiaSuccess;
}
mtiaError_t failingInit(uint32_t) {
    return mtiaErrorInvalidValue;
}
const char* fakeName() {
    return "fake";
}
const char* fakeMessage() {
    return "FAKE_SIM_MEMORY='x' is bad";
}
mtiaError_t fakeCount(int32_t* n) {
    *n = 3;
    return mtiaSuccess;
}
mtiaError_t fakeInfo(int32_t, mtiaDrvDeviceInfo*) {
    return mtiaSuccess;
}
mtiaError_t fakeDev(int32_t) {
    return mtiaSuccess;
}
mtiaError_t fakeMemInfo(int32_t, uint64_t*, uint64_t*) {
    return mtiaSuccess;
}
mtiaError_t fakeVaReserve(int32_t, uint64_t, uint64_t, void**) {
    return mtiaSuccess;
}
mtiaError_t fakeVaRelease(int32_t, void*, uint64_t) {
    return mtiaSuccess;
}
mtiaError_t fakeMemCreate(int32_t, uint64_t, mtiaDrvMem*) {
    return mtiaSuccess;
}
mtiaError_t fakeMemRelease(mtiaDrvMem) {
    return mtiaSuccess;
}
mtiaError_t fakeMap(void*, uint64_t, mtiaDrvMem, uint64_t) {
    return mtiaSuccess;
}
mtiaError_t fakeUnmap(void*, uint64_t) {
    return mtiaSuccess;
}
mtiaError_t fakeQueueCreate(int32_t, int32_t, uint32_t, mtiaDrvQueue*) {
    return mtiaSuccess;
}
mtiaError_t fakeQueueDestroy(mtiaDrvQueue) {
    return mtiaSuccess;
}
mtiaError_t fakeSubmit(mtiaDrvQueue, const mtiaDrvCommand*, uint64_t*) {
    return mtiaSuccess;
}
mtiaError_t fakeQuery(mtiaDrvQueue, uint64_t*) {
    return mtiaSuccess;
}
mtiaError_t fakeWait(mtiaDrvQueue, uint64_t, uint32_t) {
    return mtiaSuccess;
}

mtiaDriverOps completeOps() {
    mtiaDriverOps o{};
    o.version = MTIA_DRIVER_API_VERSION;
    o.structSize = sizeof(o);
    o.init = fakeInit;
    o.getName = fakeName;
    o.deviceGetCount = fakeCount;
    o.deviceGetInfo = fakeInfo;
    o.deviceGetStatus = fakeDev;
    o.deviceSynchronize = fakeDev;
    o.memGetInfo = fakeMemInfo;
    o.vaReserve = fakeVaReserve;
    o.vaRelease = fakeVaRelease;
    o.memCreate = fakeMemCreate;
    o.memRelease = fakeMemRelease;
    o.memMap = fakeMap;
    o.memUnmap = fakeUnmap;
    o.queueCreate = fakeQueueCreate;
    o.queueDestroy = fakeQueueDestroy;
    o.queueSubmit = fakeSubmit;
    o.queueQuery = fakeQuery;
    o.queueWait = fakeWait;
    o.lastErrorMessage = fakeMessage;
    return o;
}

mtiaError_t goodGetOps(uint32_t apiVersion, mtiaDriverOps* ops) {
    if (MTIA_DRIVER_API_MAJOR(apiVersion) != MTIA_DRIVER_API_VERSION_MAJOR)
        return mtiaErrorNotSupported;
    mtiaDriverOps o = completeOps();
    std::memcpy(ops, &o, std::min<size_t>(ops->structSize, sizeof(o)));
    return mtiaSuccess;
}
mtiaError_t refusingGetOps(uint32_t, mtiaDriverOps*) {
    return mtiaErrorNotSupported;
}
mtiaError_t failingInitGetOps(uint32_t v, mtiaDriverOps* ops) {
    goodGetOps(v, ops);
    ops->init = failingInit;
    return mtiaSuccess;
}

std::string initErrorOf(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), mtiaErrorInitializationError) << e.what();
        return e.what();
    }
    ADD_FAILURE() << "no error";
    return "";
}

TEST(DriverLoader, ValidTableLoadsAndFillsOptionalEntries) {
    mtiaDriverOps o = completeOps();
    validateOps(o, "test");
    ASSERT_NE(o.moduleLoad, nullptr);
    mtiaDrvModule m = nullptr;
    EXPECT_EQ(o.moduleLoad("x", &m), mtiaErrorNotSupported);
    EXPECT_EQ(o.deviceSetPeerAccess(0, 1, 1), mtiaErrorNotSupported);
    uint64_t ns = 0;
    EXPECT_EQ(o.clockNow(&ns), mtiaErrorNotSupported);
    EXPECT_STREQ(o.lastErrorMessage(), "FAKE_SIM_MEMORY='x' is bad");
}

TEST(DriverLoader, QueueCountsStayAbsentWhenNotProvided) {
    mtiaDriverOps o = completeOps();
    o.queueGetCounts = nullptr;
    validateOps(o, "test");
    EXPECT_EQ(o.queueGetCounts, nullptr);  // the runtime counts submissions itself then
    EXPECT_FALSE(mtia::driver::Driver(o, "test").countsQueues());
    mtiaDriverOps old = completeOps();
    old.structSize = offsetof(mtiaDriverOps, queueGetCounts);  // a 1.0 table
    old.queueGetCounts =
        reinterpret_cast<decltype(old.queueGetCounts)>(0x1);  // past its end: ignored
    validateOps(old, "old.so");
    EXPECT_EQ(old.queueGetCounts, nullptr);
}

mtiaError_t fakeListCreate(int32_t, const mtiaDrvCommand*, uint64_t, mtiaDrvCommandList*) {
    return mtiaSuccess;
}
mtiaError_t fakeListDestroy(mtiaDrvCommandList) {
    return mtiaSuccess;
}

TEST(DriverLoader, CommandListEntriesComeAsAPair) {
    mtiaDriverOps o = completeOps();
    o.commandListCreate = fakeListCreate;
    o.commandListDestroy = fakeListDestroy;
    validateOps(o, "new.so");
    EXPECT_EQ(o.commandListCreate, fakeListCreate);
    EXPECT_EQ(o.commandListDestroy, fakeListDestroy);
    EXPECT_TRUE(mtia::driver::Driver(o, "new.so").supportsCommandLists());

    mtiaDriverOps createOnly = completeOps();
    createOnly.commandListCreate = fakeListCreate;
    std::string m = initErrorOf([&] { validateOps(createOnly, "half.so"); });
    EXPECT_NE(m.find("half.so"), std::string::npos) << m;
    EXPECT_NE(m.find("'commandListDestroy'"), std::string::npos) << m;
    mtiaDriverOps destroyOnly = completeOps();
    destroyOnly.commandListDestroy = fakeListDestroy;
    m = initErrorOf([&] { validateOps(destroyOnly, "half.so"); });
    EXPECT_NE(m.find("'commandListCreate'"), std::string::npos) << m;
}

TEST(DriverLoader, CommandListsStayAbsentForOlderTables) {
    mtiaDriverOps o = completeOps();  // a 1.2 table without the optional pair
    validateOps(o, "test");
    EXPECT_EQ(o.commandListCreate, nullptr);
    EXPECT_EQ(o.commandListDestroy, nullptr);
    EXPECT_FALSE(mtia::driver::Driver(o, "test").supportsCommandLists());
    // A 1.1 table ends before the pair: what lies past its end is not the driver's.
    mtiaDriverOps old = completeOps();
    old.version = MTIA_DRIVER_MAKE_API_VERSION(MTIA_DRIVER_API_VERSION_MAJOR, 1);
    old.structSize = offsetof(mtiaDriverOps, commandListCreate);
    old.queueGetCounts = [](mtiaDrvQueue, uint64_t*, uint64_t*) { return mtiaSuccess; };
    old.commandListCreate = fakeListCreate;
    old.commandListDestroy = reinterpret_cast<decltype(old.commandListDestroy)>(0x1);
    validateOps(old, "old.so");
    EXPECT_EQ(old.commandListCreate, nullptr);
    EXPECT_EQ(old.commandListDestroy, nullptr);
    EXPECT_NE(old.queueGetCounts, nullptr);
    const mtia::driver::Driver driver(old, "old.so");
    EXPECT_FALSE(driver.supportsCommandLists());
    EXPECT_TRUE(driver.countsQueues());
    EXPECT_TRUE(driver.validatesLaunches());
}

TEST(DriverLoader, IpcEntriesComeAllOrNoneAndStayAbsentFor13Tables) {
    mtiaDriverOps o = completeOps();
    validateOps(o, "test");
    EXPECT_FALSE(mtia::driver::Driver(o, "test").supportsIpc());
    mtiaDriverOps half = completeOps();
    half.ipcMemExport = [](mtiaDrvMem, uint64_t, uint64_t, mtiaDrvIpcDescriptor*) {
        return mtiaSuccess;
    };
    const std::string m = initErrorOf([&] { validateOps(half, "half.so"); });
    EXPECT_NE(m.find("sets 'ipcMemExport' but lacks 'ipcMemRevoke'"), std::string::npos) << m;
    EXPECT_NE(m.find("11 entries of driver ABI 1.4"), std::string::npos) << m;
    // A 1.3 table ends before them: whatever lies past its end is not the driver's.
    mtiaDriverOps old = completeOps();
    old.version = MTIA_DRIVER_MAKE_API_VERSION(MTIA_DRIVER_API_VERSION_MAJOR, 3);
    old.structSize = offsetof(mtiaDriverOps, ipcMemExport);
    old.ipcMemExport = half.ipcMemExport;
    validateOps(old, "old.so");
    EXPECT_EQ(old.ipcMemExport, nullptr);
    EXPECT_FALSE(mtia::driver::Driver(old, "old.so").supportsIpc());
}

TEST(DriverLoader, BuiltinStyleTableOf12Loads) {
    // A getter that fills the whole 1.2 table, pair included, as the simulated device does.
    const BuiltinDriver builtins[] = {{"lists", [](uint32_t v, mtiaDriverOps* ops) {
                                           mtiaError_t st = goodGetOps(v, ops);
                                           ops->commandListCreate = fakeListCreate;
                                           ops->commandListDestroy = fakeListDestroy;
                                           return st;
                                       }}};
    auto d = loadDriver("", builtins, "");
    EXPECT_TRUE(d->supportsCommandLists());
    EXPECT_GE(MTIA_DRIVER_API_MINOR(d->ops().version), 2u);  // 1.3 added memReportAllocated
}

TEST(DriverLoader, OnlyDrivers11AndLaterValidateLaunches) {
    mtiaDriverOps o = completeOps();
    o.version = MTIA_DRIVER_MAKE_API_VERSION(MTIA_DRIVER_API_VERSION_MAJOR, 0);
    validateOps(o, "old.so");
    EXPECT_FALSE(
        mtia::driver::Driver(o, "old.so").validatesLaunches());  // the runtime checks first
    o.version = MTIA_DRIVER_MAKE_API_VERSION(MTIA_DRIVER_API_VERSION_MAJOR, 1);
    EXPECT_TRUE(mtia::driver::Driver(o, "new.so").validatesLaunches());
}

TEST(DriverLoader, AnotherMajorVersionIsRefused) {
    mtiaDriverOps o = completeOps();
    o.version = MTIA_DRIVER_MAKE_API_VERSION(MTIA_DRIVER_API_VERSION_MAJOR + 1, 0);
    std::string m = initErrorOf([&] { validateOps(o, "d.so"); });
    EXPECT_NE(m.find("driver ABI 2.0"), std::string::npos) << m;
}

TEST(DriverLoader, MissingMandatoryEntryIsNamed) {
    mtiaDriverOps o = completeOps();
    o.queueSubmit = nullptr;
    std::string m = initErrorOf([&] { validateOps(o, "d.so"); });
    EXPECT_NE(m.find("'queueSubmit'"), std::string::npos) << m;
}

TEST(DriverLoader, TableSizeOutOfRangeIsRefused) {
    mtiaDriverOps o = completeOps();
    o.structSize = 16;
    EXPECT_NE(initErrorOf([&] { validateOps(o, "d.so"); }).find("16 bytes"), std::string::npos);
    o.structSize = sizeof(o) + 8;
    initErrorOf([&] { validateOps(o, "d.so"); });
}

TEST(DriverLoader, OlderMinorTableGetsDefaultsPastItsEnd) {
    mtiaDriverOps o = completeOps();
    o.structSize = offsetof(mtiaDriverOps, lastErrorMessage);      // mandatory part only
    o.moduleLoad = reinterpret_cast<decltype(o.moduleLoad)>(0x1);  // past the end: must be ignored
    validateOps(o, "old.so");
    mtiaDrvModule m = nullptr;
    EXPECT_EQ(o.moduleLoad("x", &m), mtiaErrorNotSupported);
    EXPECT_STREQ(o.lastErrorMessage(), "");
}

TEST(DriverLoader, BuiltinsAreChosenByEmptySpecOrName) {
    const BuiltinDriver builtins[] = {{"fake", goodGetOps}};
    auto d = loadDriver("", builtins, "");
    EXPECT_STREQ(d->name(), "fake");
    EXPECT_EQ(d->deviceCount(), 3);
    EXPECT_STREQ(loadDriver("fake", builtins, "")->name(), "fake");
}

TEST(DriverLoader, UnknownNamesAndPathsFailNamingMtiaDriver) {
    const BuiltinDriver builtins[] = {{"fake", goodGetOps}};
    std::string m = initErrorOf([&] { loadDriver("nosuch", builtins, "/nonexistent"); });
    EXPECT_NE(m.find("MTIA_DRIVER='nosuch'"), std::string::npos) << m;
    EXPECT_NE(m.find("mtia_driver_nosuch.so"), std::string::npos) << m;
    m = initErrorOf([&] { loadDriver("/nonexistent/driver.so", builtins, ""); });
    EXPECT_NE(m.find("/nonexistent/driver.so"), std::string::npos) << m;
}

TEST(DriverLoader, RefusalAndInitFailureAreReported) {
    const BuiltinDriver refusing[] = {{"r", refusingGetOps}};
    EXPECT_NE(initErrorOf([&] { loadDriver("", refusing, ""); }).find("refused"),
              std::string::npos);
    const BuiltinDriver failing[] = {{"f", failingInitGetOps}};
    std::string m = initErrorOf([&] { loadDriver("", failing, ""); });
    EXPECT_NE(m.find("FAKE_SIM_MEMORY='x' is bad"), std::string::npos) << m;
}

TEST(DriverLoader, NotReadyIsNeverAFailureTheDriverMayRaise) {
    const BuiltinDriver builtins[] = {{"fake", goodGetOps}};
    auto d = loadDriver("", builtins, "");
    try {
        d->raise(mtiaErrorNotReady, "freeing", "");
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), mtiaErrorDriver);
    }
    try {
        d->raise(mtiaErrorLaunchFailure, "syncing", "kernel x faulted");
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), mtiaErrorLaunchFailure);
        EXPECT_EQ(std::string(e.what()), "syncing: kernel x faulted");
    }
}

TEST(DriverLoader, UnknownDriverCodesBecomeDriverErrors) {
    const BuiltinDriver builtins[] = {{"fake", goodGetOps}};
    auto d = loadDriver("", builtins, "");
    try {
        d->check(static_cast<mtiaError_t>(4242), "doing a thing");
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), mtiaErrorDriver);
        EXPECT_NE(std::string(e.what()).find("native code 4242"), std::string::npos) << e.what();
    }
}

// Driver ABI 1.6: the machine described without init.
int gInits = 0;
mtiaError_t countingInit(uint32_t) {
    ++gInits;
    return mtiaSuccess;
}
mtiaError_t fakeSpec(mtiaDrvMachineSpec* spec) {
    spec->devices = 2;
    spec->engines = 3;
    spec->memoryBytes = 1u << 30;
    std::strcpy(spec->machine, "fake-machine");
    return mtiaSuccess;
}
mtiaError_t fakeDescribe(const mtiaDrvMachineSpec* spec, int32_t dev, mtiaDrvDeviceInfo* info) {
    if (dev < 0 || dev >= spec->devices) return mtiaErrorInvalidDevice;
    info->totalMemory = spec->memoryBytes;
    info->numaNode = dev;
    return mtiaSuccess;
}
mtiaError_t machineGetOps(uint32_t v, mtiaDriverOps* ops) {
    goodGetOps(v, ops);
    ops->init = countingInit;
    ops->machineGetSpec = fakeSpec;
    ops->machineDescribeDevice = fakeDescribe;
    return mtiaSuccess;
}

TEST(DriverLoader, MachineEntriesComeBothOrNeither) {
    mtiaDriverOps both = completeOps();
    both.machineGetSpec = fakeSpec;
    both.machineDescribeDevice = fakeDescribe;
    validateOps(both, "new.so");
    EXPECT_TRUE(Driver(both, "new.so").describesMachines());
    mtiaDriverOps neither = completeOps();
    validateOps(neither, "old.so");
    EXPECT_FALSE(Driver(neither, "old.so").describesMachines());
    mtiaDriverOps half = completeOps();
    half.machineDescribeDevice = fakeDescribe;
    const std::string m = initErrorOf([&] { validateOps(half, "half.so"); });
    EXPECT_NE(m.find("half.so sets 'machineDescribeDevice' but lacks 'machineGetSpec'"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("2 entries of driver ABI 1.6"), std::string::npos) << m;
}

// Driver ABI 1.7: the shared fault and allocated words come both or neither.
TEST(DriverLoader, SharedWordsComeBothOrNeither) {
    mtiaDriverOps half = completeOps();
    half.deviceGetFaultWord = [](int32_t, const uint32_t**) { return mtiaSuccess; };
    const std::string m = initErrorOf([&] { validateOps(half, "half.so"); });
    EXPECT_NE(m.find("half.so sets 'deviceGetFaultWord' but lacks 'memGetAllocatedWords'"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("driver ABI 1.7"), std::string::npos) << m;
    mtiaDriverOps both = completeOps();
    both.deviceGetFaultWord = half.deviceGetFaultWord;
    both.memGetAllocatedWords = [](int32_t, uint64_t**, uint64_t**) { return mtiaSuccess; };
    validateOps(both, "both.so");
    EXPECT_NE(both.memGetAllocatedWords, nullptr);
    // A 1.6 driver's table that reaches them: not its to fill, so cleared.
    mtiaDriverOps v16 = both;
    v16.version = MTIA_DRIVER_MAKE_API_VERSION(MTIA_DRIVER_API_VERSION_MAJOR, 6);
    validateOps(v16, "v16.so");
    EXPECT_EQ(v16.deviceGetFaultWord, nullptr);
    EXPECT_EQ(v16.memGetAllocatedWords, nullptr);
}

// Driver ABI 1.8: deviceReset, a block of its own; a 1.7 driver's table that reaches it is not its
// to fill, so the runtime does without (mtiaDeviceReset cannot clear a fault then).
TEST(DriverLoader, DeviceResetIsIgnoredBefore18) {
    mtiaDriverOps ops = completeOps();
    ops.deviceReset = [](int32_t) { return mtiaSuccess; };
    validateOps(ops, "v18.so");
    EXPECT_NE(ops.deviceReset, nullptr);
    mtiaDriverOps v17 = ops;
    v17.version = MTIA_DRIVER_MAKE_API_VERSION(MTIA_DRIVER_API_VERSION_MAJOR, 7);
    validateOps(v17, "v17.so");
    EXPECT_EQ(v17.deviceReset, nullptr);
}

// Note [optional entries] in loader.cpp: one rule for every block, whatever the block.
TEST(DriverLoader, BlocksPastTheDriversVersionOrTableAreIgnored) {
    // A 1.5 driver whose table happens to reach the 1.6 entries: they are not its to fill.
    mtiaDriverOps v15 = completeOps();
    v15.version = MTIA_DRIVER_MAKE_API_VERSION(MTIA_DRIVER_API_VERSION_MAJOR, 5);
    v15.machineGetSpec =
        fakeSpec;  // only one of the pair: not refused either, as the block is not its
    v15.ipcMemSize = [](void*, uint64_t*) { return mtiaSuccess; };
    validateOps(v15, "v15.so");
    EXPECT_EQ(v15.machineGetSpec, nullptr);
    EXPECT_NE(v15.ipcMemSize, nullptr);
    // A 1.3 driver with IPC entries set: ignored as well.
    mtiaDriverOps v13 = completeOps();
    v13.version = MTIA_DRIVER_MAKE_API_VERSION(MTIA_DRIVER_API_VERSION_MAJOR, 3);
    v13.ipcMemExport = [](mtiaDrvMem, uint64_t, uint64_t, mtiaDrvIpcDescriptor*) {
        return mtiaSuccess;
    };
    v13.memReportAllocated = [](int32_t, uint64_t) { return mtiaSuccess; };
    validateOps(v13, "v13.so");
    EXPECT_EQ(v13.ipcMemExport, nullptr);
    EXPECT_NE(v13.memReportAllocated, nullptr);
    // A table that ends inside a block leaves the whole block out (the part it filled included).
    mtiaDriverOps cut = completeOps();
    cut.structSize = offsetof(mtiaDriverOps, machineDescribeDevice);
    cut.machineGetSpec = fakeSpec;
    validateOps(cut, "cut.so");
    EXPECT_EQ(cut.machineGetSpec, nullptr);
    EXPECT_FALSE(Driver(cut, "cut.so").describesMachines());
    // 1.0 entries, each a block of its own, get stand-ins when absent; later blocks stay NULL.
    mtiaDriverOps bare = completeOps();
    bare.lastErrorMessage = nullptr;
    validateOps(bare, "bare.so");
    EXPECT_STREQ(bare.lastErrorMessage(), "");
    EXPECT_EQ(bare.isDriverThread(), 0);
    EXPECT_EQ(bare.memReportAllocated, nullptr);
    EXPECT_EQ(bare.ipcMemSize, nullptr);
}

TEST(DriverLoader, OpenDriverDoesNotInitialise) {
    const BuiltinDriver builtins[] = {{"m", machineGetOps}};
    gInits = 0;
    auto opened = openDriver("", builtins, "");
    EXPECT_EQ(gInits, 0);
    ASSERT_TRUE(opened->describesMachines());
    const mtiaDrvMachineSpec spec = opened->machineSpec();
    EXPECT_EQ(spec.devices, 2);
    EXPECT_STREQ(spec.machine, "fake-machine");
    EXPECT_EQ(opened->describeDevice(spec, 1).numaNode, 1);
    try {
        opened->describeDevice(spec, 2);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), mtiaErrorInvalidDevice);
    }
    EXPECT_EQ(gInits, 0);
    loadDriver("", builtins, "");
    EXPECT_EQ(gInits, 1);
}

TEST(DriverLoader, MachineCallsWithoutTheEntriesNameThem) {
    const BuiltinDriver builtins[] = {{"fake", goodGetOps}};
    auto d = openDriver("", builtins, "");
    EXPECT_FALSE(d->describesMachines());
    for (int call = 0; call < 2; ++call) {
        try {
            if (call == 0) {
                d->machineSpec();
            } else {
                d->describeDevice(mtiaDrvMachineSpec{}, 0);
            }
            FAIL() << "no error";
        } catch (const Error& e) {
            EXPECT_EQ(e.code(), mtiaErrorNotSupported);
            const std::string m = e.what();
            EXPECT_NE(m.find(call == 0 ? "'machineGetSpec'" : "'machineDescribeDevice'"),
                      std::string::npos)
                << m;
            EXPECT_NE(m.find("driver 'fake' (built-in 'fake')"), std::string::npos) << m;
            EXPECT_NE(m.find("driver ABI 1.6"), std::string::npos) << m;
        }
    }
}

// The kernel limits were appended to mtiaDrvDeviceInfo without a version: a driver that did not
// fill them, or filled nonsense, gets what any launch can carry and an unknown cache.
TEST(DeviceLimits, UnstatedLimitsGetTheMaxima) {
    mtiaDrvDeviceInfo old{};
    old.structSize = offsetof(mtiaDrvDeviceInfo, maxKernelArgs);
    old.maxKernelArgs = 3;  // past what the driver filled: not read
    old.l2CacheSize = 77;
    normalizeLimits(old);
    EXPECT_EQ(old.maxKernelArgs, 32);
    EXPECT_EQ(old.maxKernelBuffers, 32);
    EXPECT_EQ(old.maxKernelArgBytes, 4096u);
    EXPECT_EQ(old.l2CacheSize, 0u);

    mtiaDrvDeviceInfo stated{};
    stated.structSize = sizeof stated;
    stated.maxKernelArgs = 8;
    stated.maxKernelBuffers = 3;
    stated.maxKernelArgBytes = 100;
    stated.l2CacheSize = 1 << 20;
    normalizeLimits(stated);
    EXPECT_EQ(stated.maxKernelArgs, 8);
    EXPECT_EQ(stated.maxKernelBuffers, 3);
    EXPECT_EQ(stated.maxKernelArgBytes, 100u);
    EXPECT_EQ(stated.l2CacheSize, 1u << 20);

    mtiaDrvDeviceInfo wild{};
    wild.structSize = sizeof wild;
    wild.maxKernelArgs = 500;
    wild.maxKernelBuffers = 9;
    normalizeLimits(wild);
    EXPECT_EQ(wild.maxKernelArgs, 32);
    EXPECT_EQ(wild.maxKernelBuffers, 9);
    EXPECT_EQ(wild.maxKernelArgBytes, 4096u);  // 0: not stated
    wild.maxKernelArgs = 4;
    wild.maxKernelBuffers = 9;  // more buffers than arguments cannot be named
    normalizeLimits(wild);
    EXPECT_EQ(wild.maxKernelBuffers, 4);
}

}  // namespace
}  // namespace mtia::driver
