// Configuration parsing (pure, no environment), device identity, the GetOps
// handshake, and the runs that set MTIA_SIM_* variables (sim_config_env,
// sim_config_bad, sim_no_devices).
#include "config.hpp"
#include "faults.hpp"
#include "identity.hpp"
#include "sim_test_util.hpp"

#include <cstddef>
#include <map>
#include <set>

#include <unistd.h>

using namespace mtia::sim;
using simtest::envIs;

namespace {

ConfigResult parse(std::map<std::string, std::string> vars) {
    return parseConfig(vars);
}

void expectRejected(const std::string& var, const std::string& value, const std::string& accepted) {
    const ConfigResult r = parse({{var, value}});
    EXPECT_FALSE(r.config.has_value()) << var << "=" << value;
    EXPECT_NE(r.error.find(var), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("'" + value + "'"), std::string::npos) << r.error;
    EXPECT_NE(r.error.find(accepted), std::string::npos) << r.error;
}

}  // namespace

TEST(SimConfig, Defaults) {
    const ConfigResult r = parse({});
    ASSERT_TRUE(r.config) << r.error;
    EXPECT_EQ(r.config->devices, 2);
    EXPECT_EQ(r.config->memoryBytes, 16 * kGiB);
    EXPECT_EQ(r.config->engines, 4);
    EXPECT_FALSE(r.config->bindEngines);
    EXPECT_EQ(r.config->queueDepth, 1024);
    EXPECT_TRUE(r.config->faults.empty());
    EXPECT_EQ(r.config->machine, "");
}

TEST(SimConfig, GoodValues) {
    const ConfigResult r = parse({{"MTIA_SIM_DEVICES", "0"},
                                  {"MTIA_SIM_MEMORY", "512MiB"},
                                  {"MTIA_SIM_ENGINES", "64"},
                                  {"MTIA_SIM_BIND_ENGINES", "1"},
                                  {"MTIA_SIM_MACHINE", "rack7"}});
    ASSERT_TRUE(r.config) << r.error;
    EXPECT_EQ(r.config->devices, 0);
    EXPECT_EQ(r.config->memoryBytes, 512 * kMiB);
    EXPECT_EQ(r.config->engines, 64);
    EXPECT_TRUE(r.config->bindEngines);
    EXPECT_EQ(r.config->machine, "rack7");
    EXPECT_EQ(parse({{"MTIA_SIM_DEVICES", "64"}}).config->devices, 64);
    EXPECT_EQ(parse({{"MTIA_SIM_ENGINES", "1"}}).config->engines, 1);
    EXPECT_EQ(parse({{"MTIA_SIM_DEVICES", "007"}}).config->devices, 7);
    EXPECT_EQ(parse({{"MTIA_SIM_QUEUE_DEPTH", "1"}}).config->queueDepth, 1);
    EXPECT_EQ(parse({{"MTIA_SIM_QUEUE_DEPTH", "1048576"}}).config->queueDepth, 1048576);
}

// The runtime and mtia-smi read MTIA_SIM_MACHINE through this one check: a name one of them refuses
// must not be accepted by the other.
TEST(SimConfig, MachineNameLengthIsBounded) {
    const std::string longest(kMaxMachineNameBytes, 'm');
    const ConfigResult ok = parse({{"MTIA_SIM_MACHINE", longest}});
    ASSERT_TRUE(ok.config) << ok.error;
    EXPECT_EQ(ok.config->machine, longest);
    const ConfigResult r = parse({{"MTIA_SIM_MACHINE", longest + "m"}});
    EXPECT_FALSE(r.config.has_value());
    EXPECT_NE(r.error.find("MTIA_SIM_MACHINE"), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("at most 255 bytes"), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("256"), std::string::npos) << r.error;
}

TEST(SimConfig, MemoryForms) {
    const std::pair<const char*, uint64_t> cases[] = {
        {"1073741824", kGiB},
        {"1G", kGiB},
        {"1g", kGiB},
        {"1GB", kGiB},
        {"1GiB", kGiB},
        {"512MiB", 512 * kMiB},
        {"2048K", 2 * kMiB},
        {"4096KiB", 4 * kMiB},
        {"1T", kTiB},
        {"4TiB", 4 * kTiB},
        {"16GiB", 16 * kGiB},
        {"2097152B", 2 * kMiB},
        // Rounded up to the 2 MiB granularity.
        {"1M", 2 * kMiB},
        {"1048576", 2 * kMiB},
        {"3MiB", 4 * kMiB},
        {"5000000", 6 * kMiB},
    };
    for (const auto& [text, bytes] : cases) {
        const ConfigResult r = parse({{"MTIA_SIM_MEMORY", text}});
        ASSERT_TRUE(r.config) << text << ": " << r.error;
        EXPECT_EQ(r.config->memoryBytes, bytes) << text;
        EXPECT_EQ(r.config->memoryBytes % kGranularity, 0u) << text;
    }
}

TEST(SimConfig, BadIntegers) {
    for (const char* v : {"", "-1", "65", "2x", " 2", "2 ", "+2", "0x10", "1e3",
                          "99999999999999999999999", "abc"}) {
        expectRejected("MTIA_SIM_DEVICES", v, "from 0 to 64");
    }
    for (const char* v : {"0", "65", "-4", "4.0", "four"})
        expectRejected("MTIA_SIM_ENGINES", v, "from 1 to 64");
    for (const char* v : {"2", "yes", "true", "-0", ""})
        expectRejected("MTIA_SIM_BIND_ENGINES", v, "from 0 to 1");
    for (const char* v : {"0", "1048577", "-1", "1k", ""})
        expectRejected("MTIA_SIM_QUEUE_DEPTH", v, "from 1 to 1048576");
}

TEST(SimConfig, KernelLimitsAndCache) {
    const ConfigResult d = parse({});
    ASSERT_TRUE(d.config) << d.error;
    EXPECT_EQ(d.config->maxKernelArgs, 32);
    EXPECT_EQ(d.config->maxKernelBuffers, 32);
    EXPECT_EQ(d.config->maxKernelArgBytes, 4096u);
    EXPECT_EQ(d.config->l2CacheBytes, hostLastLevelCacheBytes());
    EXPECT_GT(hostLastLevelCacheBytes(), 0u);
    const ConfigResult r = parse({{"MTIA_SIM_MAX_KERNEL_ARGS", "1"},
                                  {"MTIA_SIM_MAX_KERNEL_BUFFERS", "32"},
                                  {"MTIA_SIM_MAX_KERNEL_ARG_BYTES", "4KiB"},
                                  {"MTIA_SIM_L2_CACHE", "0"}});
    ASSERT_TRUE(r.config) << r.error;
    EXPECT_EQ(r.config->maxKernelArgs, 1);
    EXPECT_EQ(r.config->maxKernelBuffers, 32);
    EXPECT_EQ(r.config->maxKernelArgBytes, 4096u);
    EXPECT_EQ(r.config->l2CacheBytes, 0u);
    EXPECT_EQ(parse({{"MTIA_SIM_L2_CACHE", "96MiB"}}).config->l2CacheBytes, 96 * kMiB);
    for (const char* v : {"0", "33", "-1", "4k", ""})
        expectRejected("MTIA_SIM_MAX_KERNEL_ARGS", v, "from 1 to 32");
    for (const char* v : {"0", "33", "many"})
        expectRejected("MTIA_SIM_MAX_KERNEL_BUFFERS", v, "from 1 to 32");
    for (const char* v : {"0", "4097", "5K", "lots", ""})
        expectRejected("MTIA_SIM_MAX_KERNEL_ARG_BYTES", v, "from 1 to 4096");
    for (const char* v : {"1.5M", "big", "2T", ""})
        expectRejected("MTIA_SIM_L2_CACHE", v, "from 0 to");
    // The device reports them; they are not part of its identity (uuid), as the queue depth is not.
    mtiaDrvDeviceInfo info{};
    describeIdentity(*r.config, 0, info);
    EXPECT_EQ(info.maxKernelArgs, 1);
    EXPECT_EQ(info.maxKernelBuffers, 32);
    EXPECT_EQ(info.maxKernelArgBytes, 4096u);
    EXPECT_EQ(info.l2CacheSize, 0u);
    EXPECT_EQ(deviceUuid(*r.config, 0), deviceUuid(*d.config, 0));
}

TEST(SimConfig, BadMemory) {
    for (const char* v :
         {"", "12Q", "lots", "1.5G", "-1G", "1GiBs", "1iB", "G", "GiB", "1 G", "1KB2", "1Gi",
          "18446744073709551616", "16777216T", "512K", "1048575", "5T", "0"}) {
        expectRejected("MTIA_SIM_MEMORY", v, "1MiB to 4TiB");
    }
}

TEST(SimConfig, ByteSizeAndUnsignedParsers) {
    EXPECT_EQ(parseUnsigned("18446744073709551615"), UINT64_MAX);
    EXPECT_EQ(parseUnsigned("18446744073709551616"), std::nullopt);
    EXPECT_EQ(parseUnsigned(""), std::nullopt);
    EXPECT_EQ(parseUnsigned("-0"), std::nullopt);
    EXPECT_EQ(parseByteSize("0"), 0u);
    EXPECT_EQ(parseByteSize("3k"), 3072u);
    EXPECT_EQ(parseByteSize("16777215T"), 16777215ull << 40);
    EXPECT_EQ(parseByteSize("16777216T"), std::nullopt);
    EXPECT_EQ(parseByteSize("1X"), std::nullopt);
}

TEST(SimConfig, FaultPlanItems) {
    const ConfigResult r =
        parse({{"MTIA_SIM_FAULTS",
                "alloc=3,kernel=fill_f32,kernel=add_f32@2,slow=100,slow=1:200,slow=0.3:50"}});
    ASSERT_TRUE(r.config) << r.error;
    const FaultPlan& p = r.config->faults;
    EXPECT_EQ(p.allocFailures, std::vector<uint64_t>{3});
    ASSERT_EQ(p.kernels.size(), 2u);
    EXPECT_EQ(p.kernels[0].kernel, "fill_f32");
    EXPECT_EQ(p.kernels[0].launch, 0u);
    EXPECT_EQ(p.kernels[1].kernel, "add_f32");
    EXPECT_EQ(p.kernels[1].launch, 2u);
    ASSERT_EQ(p.slow.size(), 3u);
    EXPECT_EQ(p.slow[0].device, -1);
    EXPECT_EQ(p.slow[0].micros, 100u);
    EXPECT_EQ(p.slow[1].device, 1);
    EXPECT_EQ(p.slow[1].queue, -1);
    EXPECT_EQ(p.slow[2].device, 0);
    EXPECT_EQ(p.slow[2].queue, 3);
    EXPECT_EQ(p.slow[2].micros, 50u);
    EXPECT_TRUE(parse({{"MTIA_SIM_FAULTS", ""}}).config->faults.empty());
}

TEST(SimConfig, BadFaultItems) {
    for (const char* item :
         {"alloc=0", "alloc=", "alloc=x", "alloc", "kernel=", "kernel=@2", "kernel=a@0",
          "kernel=a@", "kernel=a@b", "slow=", "slow=1:", "slow=a:1", "slow=1.:5", "slow=.1:5",
          "slow=1.2.3:4", "slow=-1", "bogus=1", "=1"}) {
        const ConfigResult r = parse({{"MTIA_SIM_FAULTS", item}});
        EXPECT_FALSE(r.config) << item;
        EXPECT_NE(r.error.find("MTIA_SIM_FAULTS"), std::string::npos) << r.error;
        EXPECT_NE(r.error.find(std::string("item '") + item + "'"), std::string::npos) << r.error;
    }
    for (const char* list : {"alloc=1,", ",alloc=1", "alloc=1,,slow=2"}) {
        const ConfigResult r = parse({{"MTIA_SIM_FAULTS", list}});
        EXPECT_FALSE(r.config) << list;
        EXPECT_NE(r.error.find("item ''"), std::string::npos) << r.error;
    }
    const ConfigResult r = parse({{"MTIA_SIM_FAULTS", "slow=5:10"}});
    EXPECT_FALSE(r.config);
    EXPECT_NE(r.error.find("device 5"), std::string::npos) << r.error;
}

TEST(SimConfig, FaultInjectorCounts) {
    FaultPlan plan;
    std::string error;
    ASSERT_TRUE(parseFaultPlan(
        "alloc=2,alloc=4,kernel=k@2,kernel=k@3,kernel=every,slow=10,slow=1:30,slow=1.2:20", plan,
        error))
        << error;
    FaultInjector f(plan);
    EXPECT_FALSE(f.nextAllocFails());
    EXPECT_TRUE(f.nextAllocFails());
    EXPECT_FALSE(f.nextAllocFails());
    EXPECT_TRUE(f.nextAllocFails());
    EXPECT_FALSE(f.nextAllocFails());
    EXPECT_FALSE(f.nextLaunchFaults("k"));
    EXPECT_FALSE(f.nextLaunchFaults("other"));
    EXPECT_TRUE(f.nextLaunchFaults("k"));
    EXPECT_TRUE(f.nextLaunchFaults("k"));
    EXPECT_FALSE(f.nextLaunchFaults("k"));
    EXPECT_TRUE(f.nextLaunchFaults("every"));
    EXPECT_TRUE(f.nextLaunchFaults("every"));
    EXPECT_EQ(f.slowNs(0, 0), 10'000u);
    EXPECT_EQ(f.slowNs(1, 0), 30'000u);  // the largest matching delay wins
    EXPECT_EQ(f.slowNs(1, 2), 30'000u);
    FaultInjector none(FaultPlan{});
    EXPECT_FALSE(none.nextAllocFails());
    EXPECT_FALSE(none.nextLaunchFaults("k"));
    EXPECT_EQ(none.slowNs(0, 0), 0u);
}

TEST(SimIdentity, UuidIsDeterministicAndDistinct) {
    Config a = *parse({}).config;
    std::set<std::array<uint8_t, 16>> seen;
    for (int i = 0; i < 8; ++i) {
        EXPECT_EQ(deviceUuid(a, i), deviceUuid(a, i));
        seen.insert(deviceUuid(a, i));
    }
    EXPECT_EQ(seen.size(), 8u);
    Config b = a;
    b.memoryBytes = 8 * kGiB;
    Config c = a;
    c.machine = "other";
    Config e = a;
    e.engines = 2;
    Config n = a;
    n.devices = 3;
    for (const Config* other : {&b, &c, &e, &n}) EXPECT_NE(deviceUuid(a, 0), deviceUuid(*other, 0));
    const auto u = deviceUuid(a, 0);
    EXPECT_EQ(u[6] >> 4, 8);       // version 8
    EXPECT_EQ(u[8] & 0xc0, 0x80);  // RFC variant
}

TEST(SimIdentity, PciBusIds) {
    EXPECT_EQ(devicePciBusId(0), "0000:10:00.0");
    EXPECT_EQ(devicePciBusId(1), "0000:11:00.0");
    EXPECT_EQ(devicePciBusId(63), "0000:4f:00.0");
}

TEST(SimGetOps, RefusesOtherMajorAndNull) {
    mtiaDriverOps ops{};
    ops.structSize = sizeof(ops);
    EXPECT_EQ(mtiaSimDriverGetOps(MTIA_DRIVER_MAKE_API_VERSION(2u, 0u), &ops),
              mtiaErrorNotSupported);
    EXPECT_EQ(mtiaSimDriverGetOps(MTIA_DRIVER_MAKE_API_VERSION(0u, 9u), &ops),
              mtiaErrorNotSupported);
    EXPECT_EQ(ops.init, nullptr);
    EXPECT_EQ(mtiaSimDriverGetOps(MTIA_DRIVER_API_VERSION, nullptr), mtiaErrorInvalidValue);
    ops.structSize = 4;
    EXPECT_EQ(mtiaSimDriverGetOps(MTIA_DRIVER_API_VERSION, &ops), mtiaErrorInvalidValue);
    // A newer minor version of the same major is fine: the driver reports its own.
    ops.structSize = sizeof(ops);
    EXPECT_EQ(mtiaSimDriverGetOps(MTIA_DRIVER_MAKE_API_VERSION(1u, 9u), &ops), mtiaSuccess);
    EXPECT_EQ(ops.version, MTIA_DRIVER_API_VERSION);
}

TEST(SimGetOps, FillsEveryEntry) {
    mtiaDriverOps ops{};
    ops.structSize = sizeof(ops);
    ASSERT_EQ(mtiaSimDriverGetOps(MTIA_DRIVER_API_VERSION, &ops), mtiaSuccess);
    EXPECT_EQ(ops.version, MTIA_DRIVER_API_VERSION);
    EXPECT_EQ(ops.structSize, sizeof(ops));
    const auto* entries = reinterpret_cast<void* const*>(reinterpret_cast<const char*>(&ops) +
                                                         offsetof(mtiaDriverOps, init));
    const size_t count = (sizeof(ops) - offsetof(mtiaDriverOps, init)) / sizeof(void*);
    for (size_t i = 0; i < count; ++i) EXPECT_NE(entries[i], nullptr) << "entry " << i;
    EXPECT_STREQ(ops.getName(), "sim");
    EXPECT_STREQ(ops.lastErrorMessage(), ops.lastErrorMessage());
}

TEST(SimGetOps, WritesAtMostStructSize) {
    // An older runtime's table ends after deviceGetCount; the bytes behind it must stay untouched.
    struct {
        mtiaDriverOps ops;
        unsigned char guard[64];
    } buffer;
    std::memset(&buffer, 0xa5, sizeof(buffer));
    buffer.ops.structSize = offsetof(mtiaDriverOps, deviceGetInfo);
    ASSERT_EQ(mtiaSimDriverGetOps(MTIA_DRIVER_API_VERSION, &buffer.ops), mtiaSuccess);
    EXPECT_EQ(buffer.ops.structSize, offsetof(mtiaDriverOps, deviceGetInfo));
    EXPECT_NE(buffer.ops.deviceGetCount, nullptr);
    const auto* after = reinterpret_cast<const unsigned char*>(&buffer.ops) +
                        offsetof(mtiaDriverOps, deviceGetInfo);
    for (size_t i = 0; i < sizeof(void*); ++i) EXPECT_EQ(after[i], 0xa5);
    // A size ending inside an entry gets only the whole entries before it.
    std::memset(&buffer, 0xa5, sizeof(buffer));
    buffer.ops.structSize = offsetof(mtiaDriverOps, getName) + 4;
    ASSERT_EQ(mtiaSimDriverGetOps(MTIA_DRIVER_API_VERSION, &buffer.ops), mtiaSuccess);
    EXPECT_EQ(buffer.ops.structSize, offsetof(mtiaDriverOps, getName));
    // A newer runtime's larger table gets this driver's size back.
    std::memset(&buffer, 0, sizeof(buffer));
    buffer.ops.structSize = sizeof(buffer);
    ASSERT_EQ(mtiaSimDriverGetOps(MTIA_DRIVER_API_VERSION, &buffer.ops), mtiaSuccess);
    EXPECT_EQ(buffer.ops.structSize, sizeof(mtiaDriverOps));
    for (unsigned char b : buffer.guard) EXPECT_EQ(b, 0);
}

class SimInit : public simtest::SimTest {};

TEST_F(SimInit, RejectsFlagsAndIsIdempotent) {
    EXPECT_EQ(d.init(1), mtiaErrorInvalidValue);
    EXPECT_NE(lastError().find("flags"), std::string::npos);
    EXPECT_EQ(d.init(0), mtiaSuccess);
    int32_t count = -1;
    EXPECT_EQ(d.deviceGetCount(&count), mtiaSuccess);
    EXPECT_GE(count, 0);
    EXPECT_EQ(d.deviceGetCount(nullptr), mtiaErrorInvalidValue);
    uint64_t now = 0;
    EXPECT_EQ(d.clockNow(&now), mtiaSuccess);
    EXPECT_GT(now, 0u);
    EXPECT_EQ(d.clockNow(nullptr), mtiaErrorInvalidValue);
    EXPECT_EQ(d.isDriverThread(), 0);
}

// ---- runs with MTIA_SIM_* set (see CMakeLists.txt / meson.build) ----

class SimConfigEnv : public simtest::SimTest {
protected:
    void SetUp() override {
        if (!envIs("MTIA_SIM_DEVICES", "3"))
            GTEST_SKIP() << "runs as test sim_config_env (MTIA_SIM_DEVICES=3 ...)";
        SimTest::SetUp();
    }
};

TEST_F(SimConfigEnv, DevicesFollowTheEnvironment) {
    ASSERT_EQ(deviceCount(), 3);
    std::set<std::string> uuids;
    for (int32_t dev = 0; dev < 3; ++dev) {
        const mtiaDrvDeviceInfo i = info(dev);
        EXPECT_EQ(i.totalMemory, 64 * kMiB);
        EXPECT_EQ(i.engines, 1);
        EXPECT_EQ(i.vaSize, 4 * 64 * kMiB);
        // HWLOC_XMLFILE injects two NUMA nodes: devices alternate between them.
        EXPECT_EQ(i.numaNode, dev % 2) << "device " << dev;
        uuids.insert(std::string(reinterpret_cast<const char*>(i.uuid), 16));
        Config expected = *configFromEnvironment().config;
        const auto uuid = deviceUuid(expected, dev);
        EXPECT_EQ(std::memcmp(i.uuid, uuid.data(), 16), 0);
    }
    EXPECT_EQ(uuids.size(), 3u);
    uint64_t free = 0, total = 0;
    EXPECT_EQ(d.memGetInfo(2, &free, &total), mtiaSuccess);
    EXPECT_EQ(total, 64 * kMiB);
    EXPECT_EQ(free, total);
}

TEST_F(SimConfigEnv, OneEngineRunsTheMostUrgentQueueFirst) {
    // The only engine is busy; low-priority work is queued before high-priority work, yet the
    // high-priority work runs first once the engine frees up.
    mtiaDrvQueue blocker = simtest::makeQueue(0, 0);
    mtiaDrvQueue low = simtest::makeQueue(0, 0);
    mtiaDrvQueue high = simtest::makeQueue(0, -5);
    simtest::submitSleep(blocker, 100'000);
    uint64_t tLow = 0, tHigh = 0;
    usleep(20'000);
    simtest::submitTimestamp(low, &tLow);
    simtest::submitTimestamp(high, &tHigh);
    EXPECT_EQ(simtest::finish(low), mtiaSuccess);
    EXPECT_EQ(simtest::finish(high), mtiaSuccess);
    EXPECT_LT(tHigh, tLow);
    // Out-of-range priorities are clamped, not refused.
    mtiaDrvQueue clamped = nullptr;
    EXPECT_EQ(d.queueCreate(0, -100, 0, &clamped), mtiaSuccess);
    EXPECT_EQ(d.queueDestroy(clamped), mtiaSuccess);
    EXPECT_EQ(d.queueCreate(0, 100, 0, &clamped), mtiaSuccess);
    EXPECT_EQ(d.queueDestroy(clamped), mtiaSuccess);
    for (mtiaDrvQueue q : {blocker, low, high}) EXPECT_EQ(d.queueDestroy(q), mtiaSuccess);
}

TEST_F(SimConfigEnv, CapacityIsTheConfiguredMemory) {
    mtiaDrvMem mem = nullptr;
    EXPECT_EQ(d.memCreate(1, 64 * kMiB, &mem), mtiaSuccess) << lastError();
    mtiaDrvMem more = nullptr;
    EXPECT_EQ(d.memCreate(1, simtest::kGran, &more), mtiaErrorMemoryAllocation);
    EXPECT_NE(lastError().find("requested 2097152 bytes, 67108864 bytes used of 67108864 total"),
              std::string::npos)
        << lastError();
    EXPECT_EQ(d.memRelease(mem), mtiaSuccess);
}

TEST(SimConfigBad, InitNamesTheVariable) {
    if (!envIs("MTIA_SIM_MEMORY", "12Q"))
        GTEST_SKIP() << "runs as test sim_config_bad (MTIA_SIM_MEMORY=12Q)";
    const mtiaDriverOps& d = simtest::table();
    int32_t count = 0;
    EXPECT_EQ(d.deviceGetCount(&count), mtiaErrorInitializationError);
    EXPECT_EQ(d.init(0), mtiaErrorInvalidValue);
    const std::string message = d.lastErrorMessage();
    EXPECT_NE(message.find("MTIA_SIM_MEMORY='12Q'"), std::string::npos) << message;
    EXPECT_NE(message.find("512MiB"), std::string::npos) << message;
    EXPECT_EQ(d.deviceGetCount(&count), mtiaErrorInitializationError);
    mtiaDrvQueue q = nullptr;
    EXPECT_EQ(d.queueCreate(0, 0, 0, &q), mtiaErrorInitializationError);
    EXPECT_STREQ(d.getName(), "sim");
}

class SimNoDevices : public simtest::SimTest {
protected:
    void SetUp() override {
        if (!envIs("MTIA_SIM_DEVICES", "0"))
            GTEST_SKIP() << "runs as test sim_no_devices (MTIA_SIM_DEVICES=0)";
        SimTest::SetUp();
    }
};

TEST_F(SimNoDevices, EverythingRefusesDevices) {
    EXPECT_EQ(deviceCount(), 0);
    mtiaDrvDeviceInfo i{};
    i.structSize = sizeof(i);
    EXPECT_EQ(d.deviceGetInfo(0, &i), mtiaErrorInvalidDevice);
    mtiaDrvQueue q = nullptr;
    EXPECT_EQ(d.queueCreate(0, 0, 0, &q), mtiaErrorInvalidDevice);
    EXPECT_NE(lastError().find("0 device(s)"), std::string::npos) << lastError();
    mtiaDrvMem mem = nullptr;
    EXPECT_EQ(d.memCreate(0, simtest::kGran, &mem), mtiaErrorInvalidDevice);
    EXPECT_EQ(d.deviceSynchronize(0), mtiaErrorInvalidDevice);
    mtiaDrvKernel k = nullptr;
    EXPECT_EQ(d.moduleGetKernel(nullptr, "fill_f32", &k), mtiaSuccess);
}
