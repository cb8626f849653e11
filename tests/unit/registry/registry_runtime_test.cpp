// What the runtime publishes in its registry slot, read the way a monitoring
// tool reads it (a read-only open, no lock): reserved bytes from the device's
// physical memory, allocated bytes and their peak from the caching allocator
// (driver ABI 1.7 shared words; 1.3 memReportAllocated before), and mtiaMemGetInfo seeing the same.
// Runs as test registry_runtime_figures (one 256 MiB device).
#include "platform/registry/registry.hpp"

#include <mtia/mtia.h>

#include <gtest/gtest.h>

#include <unistd.h>

#include <memory>

namespace mtia::registry {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

// This process's record in the registry of the machine named by MTIA_SIM_MACHINE.
bool ownRecord(ProcessRecord& out) {
    const char* machine = getenv("MTIA_SIM_MACHINE");
    if (machine == nullptr) return false;
    for (const std::string& name : listMachines(geteuid())) {
        if (name.find(std::string(".") + machine + ".") == std::string::npos) continue;
        std::unique_ptr<Registry> reader;
        if (!Registry::openReadOnly(name, reader)) continue;
        for (const ProcessRecord& r : reader->processes()) {
            if (r.pidVisible && r.pid == static_cast<uint32_t>(getpid())) {
                out = r;
                return true;
            }
        }
    }
    return false;
}

TEST(RegistryRuntime, AllocatorFiguresReachTheSlot) {
    const char* memory = getenv("MTIA_SIM_MEMORY");
    if (memory == nullptr || std::string(memory) != "256MiB")
        GTEST_SKIP() << "runs as test registry_runtime_figures (MTIA_SIM_MEMORY=256MiB)";
    ASSERT_EQ(mtiaSetDevice(0), mtiaSuccess);
    void* a = nullptr;
    void* b = nullptr;
    ASSERT_EQ(mtiaMalloc(&a, 10 * kMiB), mtiaSuccess) << mtiaGetLastErrorMessage();
    ASSERT_EQ(mtiaMalloc(&b, 30 * kMiB), mtiaSuccess) << mtiaGetLastErrorMessage();
    ProcessRecord record;
    ASSERT_TRUE(ownRecord(record));
    ASSERT_GE(record.devices.size(), 1u);
    const DeviceFigures held = record.devices[0];  // a copy: record is read again below
    EXPECT_GE(held.allocated, 40 * kMiB);
    EXPECT_GE(held.reserved, held.allocated);  // the caching allocator's segments hold the blocks
    EXPECT_EQ(held.peakAllocated, held.allocated);
    size_t free = 0, total = 0;
    ASSERT_EQ(mtiaMemGetInfo(&free, &total), mtiaSuccess);
    EXPECT_EQ(total, 256 * kMiB);
    EXPECT_EQ(free, total - held.reserved);

    ASSERT_EQ(mtiaFree(b), mtiaSuccess);
    ASSERT_TRUE(ownRecord(record));
    EXPECT_LT(record.devices[0].allocated, held.allocated);
    EXPECT_EQ(record.devices[0].peakAllocated, held.peakAllocated);
    ASSERT_EQ(mtiaFree(a), mtiaSuccess);
    ASSERT_TRUE(ownRecord(record));
    EXPECT_EQ(record.devices[0].allocated, 0u);
}

}  // namespace
}  // namespace mtia::registry
