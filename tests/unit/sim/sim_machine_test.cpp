// Driver ABI 1.6 on the simulator: the machine and its devices described without init
// (machineGetSpec, machineDescribeDevice), as the management library reads them. The described
// devices must equal what deviceGetInfo (so mtiaGetDeviceProperties) reports once initialised.
#include "config.hpp"
#include "sim_test_util.hpp"

#include <cstddef>
#include <cstring>
#include <string>

using mtia::sim::kMiB;
using simtest::envIs;

namespace {

mtiaDrvMachineSpec specOf(int32_t devices, int32_t engines, uint64_t memory, const char* name) {
    mtiaDrvMachineSpec s{};
    s.structSize = sizeof(s);
    s.devices = devices;
    s.engines = engines;
    s.memoryBytes = memory;
    std::strncpy(s.machine, name, sizeof s.machine - 1);
    return s;
}

mtiaDrvDeviceInfo emptyInfo() {
    mtiaDrvDeviceInfo i{};
    i.structSize = sizeof(i);
    return i;
}

}  // namespace

TEST(SimMachine, RefusesBadArguments) {
    const mtiaDriverOps& d = simtest::table();
    EXPECT_EQ(d.machineGetSpec(nullptr), mtiaErrorInvalidValue);
    mtiaDrvMachineSpec small{};
    small.structSize = 8;
    EXPECT_EQ(d.machineGetSpec(&small), mtiaErrorInvalidValue);
    EXPECT_NE(std::string(d.lastErrorMessage()).find("structSize 8"), std::string::npos)
        << d.lastErrorMessage();

    const mtiaDrvMachineSpec good = specOf(2, 4, 64 * kMiB, "unit-machine");
    mtiaDrvDeviceInfo info = emptyInfo();
    EXPECT_EQ(d.machineDescribeDevice(nullptr, 0, &info), mtiaErrorInvalidValue);
    EXPECT_EQ(d.machineDescribeDevice(&good, 0, nullptr), mtiaErrorInvalidValue);
    EXPECT_EQ(d.machineDescribeDevice(&good, 2, &info), mtiaErrorInvalidDevice);
    EXPECT_NE(std::string(d.lastErrorMessage()).find("2 device(s)"), std::string::npos)
        << d.lastErrorMessage();
    EXPECT_EQ(d.machineDescribeDevice(&good, -1, &info), mtiaErrorInvalidDevice);
    const mtiaDrvMachineSpec noEngines = specOf(2, 0, 64 * kMiB, "");
    EXPECT_EQ(d.machineDescribeDevice(&noEngines, 0, &info), mtiaErrorInvalidValue);
    mtiaDrvMachineSpec unterminated = good;
    std::memset(unterminated.machine, 'x', sizeof unterminated.machine);
    EXPECT_EQ(d.machineDescribeDevice(&unterminated, 0, &info), mtiaErrorInvalidValue);

    // A caller's older, smaller info gets its own bytes only.
    mtiaDrvDeviceInfo shortInfo = emptyInfo();
    shortInfo.structSize = offsetof(mtiaDrvDeviceInfo, uuid);
    ASSERT_EQ(d.machineDescribeDevice(&good, 1, &shortInfo), mtiaSuccess) << d.lastErrorMessage();
    EXPECT_EQ(shortInfo.structSize, offsetof(mtiaDrvDeviceInfo, uuid));
    EXPECT_EQ(shortInfo.uuid[0], 0);
    EXPECT_NE(shortInfo.name[0], '\0');
}

// Runs as its own test (sim_machine_env) with MTIA_SIM_DEVICES=3 MTIA_SIM_MEMORY=64MiB
// MTIA_SIM_ENGINES=1 MTIA_SIM_MACHINE=unit-test and two NUMA nodes, in a process not yet
// initialised.
TEST(SimMachineEnv, DescribedWithoutInitAsDeviceGetInfoReports) {
    if (!envIs("MTIA_SIM_DEVICES", "3"))
        GTEST_SKIP() << "runs as test sim_machine_env (MTIA_SIM_DEVICES=3 ...)";
    const mtiaDriverOps& d = simtest::table();
    int32_t count = 0;
    ASSERT_EQ(d.deviceGetCount(&count), mtiaErrorInitializationError)
        << "the driver must not be initialised yet";

    mtiaDrvMachineSpec spec{};
    spec.structSize = sizeof(spec);
    ASSERT_EQ(d.machineGetSpec(&spec), mtiaSuccess) << d.lastErrorMessage();
    EXPECT_EQ(spec.structSize, sizeof(spec));
    EXPECT_EQ(spec.devices, 3);
    EXPECT_EQ(spec.engines, 1);
    EXPECT_EQ(spec.memoryBytes, 64 * kMiB);
    EXPECT_STREQ(spec.machine, "unit-test");
    mtiaDrvDeviceInfo described[3];
    for (int32_t dev = 0; dev < 3; ++dev) {
        described[dev] = emptyInfo();
        ASSERT_EQ(d.machineDescribeDevice(&spec, dev, &described[dev]), mtiaSuccess)
            << d.lastErrorMessage();
        EXPECT_EQ(described[dev].vaBase, 0u);
        EXPECT_EQ(described[dev].vaSize, 0u);
    }
    // Describing started nothing.
    ASSERT_EQ(d.deviceGetCount(&count), mtiaErrorInitializationError);

    ASSERT_EQ(d.init(0), mtiaSuccess) << d.lastErrorMessage();
    ASSERT_EQ(d.deviceGetCount(&count), mtiaSuccess);
    ASSERT_EQ(count, spec.devices);
    for (int32_t dev = 0; dev < 3; ++dev) {
        mtiaDrvDeviceInfo live = emptyInfo();
        ASSERT_EQ(d.deviceGetInfo(dev, &live), mtiaSuccess) << d.lastErrorMessage();
        EXPECT_NE(live.vaSize, 0u);
        // Everything but the address range, field by field through the whole struct.
        live.vaBase = live.vaSize = 0;
        EXPECT_EQ(std::memcmp(&live, &described[dev], sizeof live), 0) << "device " << dev;
        EXPECT_STREQ(live.pciBusId, described[dev].pciBusId);
        EXPECT_EQ(live.numaNode, dev % 2);  // HWLOC_XMLFILE: two NUMA nodes, taken in turn
    }
}

TEST(SimConfigBad, MachineSpecNamesTheVariable) {
    if (!envIs("MTIA_SIM_MEMORY", "12Q"))
        GTEST_SKIP() << "runs as test sim_config_bad (MTIA_SIM_MEMORY=12Q)";
    const mtiaDriverOps& d = simtest::table();
    mtiaDrvMachineSpec spec{};
    spec.structSize = sizeof(spec);
    EXPECT_EQ(d.machineGetSpec(&spec), mtiaErrorInvalidValue);
    EXPECT_NE(std::string(d.lastErrorMessage()).find("MTIA_SIM_MEMORY='12Q'"), std::string::npos)
        << d.lastErrorMessage();
}
