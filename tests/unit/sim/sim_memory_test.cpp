// Device memory through the ops table: reservations, physical memory,
// mappings, capacity, and every way of getting them wrong.
#include "sim_test_util.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <thread>
#include <vector>

using simtest::DeviceBuffer;
using simtest::kGran;

namespace {

class SimMemory : public simtest::SimTest {};

// Bytes of host memory behind device dev's memfd.
long long memfdAllocatedBytes(int32_t dev) {
    const std::string wanted = "/memfd:mtia-sim-dev" + std::to_string(dev) + " (deleted)";
    DIR* dir = opendir("/proc/self/fd");
    if (dir == nullptr) return -1;
    long long bytes = -1;
    while (dirent* entry = readdir(dir)) {
        const std::string path = std::string("/proc/self/fd/") + entry->d_name;
        char target[PATH_MAX] = {};
        const ssize_t n = readlink(path.c_str(), target, sizeof(target) - 1);
        if (n <= 0 || wanted != target) continue;
        struct stat st {};
        if (stat(path.c_str(), &st) == 0) bytes = static_cast<long long>(st.st_blocks) * 512;
    }
    closedir(dir);
    return bytes;
}

void fillPattern(void* p, uint64_t bytes, uint32_t seed) {
    auto* w = static_cast<uint32_t*>(p);
    for (uint64_t i = 0; i < bytes / 4; ++i) w[i] = seed + static_cast<uint32_t>(i) * 2654435761u;
}

bool hasPattern(const void* p, uint64_t bytes, uint32_t seed) {
    const auto* w = static_cast<const uint32_t*>(p);
    for (uint64_t i = 0; i < bytes / 4; ++i) {
        if (w[i] != seed + static_cast<uint32_t>(i) * 2654435761u) return false;
    }
    return true;
}

}  // namespace

TEST_F(SimMemory, DeviceInfo) {
    const int32_t n = deviceCount();
    ASSERT_GE(n, 1);
    for (int32_t dev = 0; dev < n; ++dev) {
        const mtiaDrvDeviceInfo i = info(dev);
        EXPECT_EQ(i.structSize, sizeof(i));
        EXPECT_STREQ(i.name, "MTIA Sim Device");
        char bus[32];
        snprintf(bus, sizeof(bus), "0000:%02x:00.0", 0x10 + dev);
        EXPECT_STREQ(i.pciBusId, bus);
        EXPECT_EQ(i.pciDomain, 0);
        EXPECT_EQ(i.pciBus, 0x10 + dev);
        EXPECT_EQ(i.pciDevice, 0);
        EXPECT_EQ(i.major, 2);
        EXPECT_EQ(i.minor, 0);
        EXPECT_GE(i.engines, 1);
        EXPECT_EQ(i.maxThreadsPerBlock, 1024);
        EXPECT_EQ(i.maxThreadsDim[0], 1024);
        EXPECT_EQ(i.maxThreadsDim[1], 1024);
        EXPECT_EQ(i.maxThreadsDim[2], 64);
        EXPECT_EQ(i.maxGridSize[0], 2147483647);
        EXPECT_EQ(i.maxGridSize[1], 65535);
        EXPECT_EQ(i.maxGridSize[2], 65535);
        EXPECT_EQ(i.sharedMemPerBlock, 48u * 1024);
        EXPECT_EQ(i.allocationGranularity, kGran);
        EXPECT_EQ(i.priorityLeast, 0);
        EXPECT_EQ(i.priorityGreatest, -5);
        EXPECT_EQ(i.canAccessPeers, 1);
        EXPECT_GE(i.numaNode, -1);
        EXPECT_EQ(i.vaSize, 4 * i.totalMemory);
        EXPECT_NE(i.vaBase, 0u);
        EXPECT_EQ(i.vaBase % kGran, 0u);
        EXPECT_EQ(info(dev).vaBase, i.vaBase);  // reserved once
    }
    mtiaDrvDeviceInfo i{};
    i.structSize = sizeof(i);
    EXPECT_EQ(d.deviceGetInfo(-1, &i), mtiaErrorInvalidDevice);
    EXPECT_EQ(d.deviceGetInfo(n, &i), mtiaErrorInvalidDevice);
    EXPECT_EQ(d.deviceGetInfo(0, nullptr), mtiaErrorInvalidValue);
    i.structSize = 0;
    EXPECT_EQ(d.deviceGetInfo(0, &i), mtiaErrorInvalidValue);
}

TEST_F(SimMemory, DeviceInfoWritesAtMostStructSize) {
    mtiaDrvDeviceInfo i;
    std::memset(&i, 0x5a, sizeof(i));
    i.structSize = offsetof(mtiaDrvDeviceInfo, uuid);  // structSize and name only
    ASSERT_EQ(d.deviceGetInfo(0, &i), mtiaSuccess);
    EXPECT_EQ(i.structSize, offsetof(mtiaDrvDeviceInfo, uuid));
    EXPECT_STREQ(i.name, "MTIA Sim Device");
    EXPECT_EQ(i.uuid[0], 0x5a);
    EXPECT_EQ(i.canAccessPeers, 0x5a5a5a5a);
}

TEST_F(SimMemory, MappedBytesFollowThePhysicalMemory) {
    const uint64_t size = 2 * kGran;
    void* first = nullptr;
    void* second = nullptr;
    ASSERT_EQ(d.vaReserve(0, size, 0, &first), mtiaSuccess) << lastError();
    ASSERT_EQ(d.vaReserve(0, size, 0, &second), mtiaSuccess) << lastError();
    EXPECT_NE(first, second);
    const mtiaDrvDeviceInfo i = info(0);
    for (void* va : {first, second}) {
        EXPECT_GE(reinterpret_cast<uint64_t>(va), i.vaBase);
        EXPECT_LE(reinterpret_cast<uint64_t>(va) + size, i.vaBase + i.vaSize);
    }
    mtiaDrvMem mem = nullptr;
    ASSERT_EQ(d.memCreate(0, size, &mem), mtiaSuccess) << lastError();
    ASSERT_EQ(d.memMap(first, size, mem, 0), mtiaSuccess) << lastError();
    fillPattern(first, size, 7);
    // Mapped twice at once: both views are the same bytes.
    ASSERT_EQ(d.memMap(second, size, mem, 0), mtiaSuccess) << lastError();
    EXPECT_TRUE(hasPattern(second, size, 7));
    static_cast<uint32_t*>(second)[5] = 0xdeadbeef;
    EXPECT_EQ(static_cast<uint32_t*>(first)[5], 0xdeadbeefu);
    static_cast<uint32_t*>(first)[5] = 7 + 5 * 2654435761u;
    ASSERT_EQ(d.memUnmap(first, size), mtiaSuccess);
    ASSERT_EQ(d.memUnmap(second, size), mtiaSuccess);
    // Mapped again at another address (what expandable segments do): same bytes.
    ASSERT_EQ(d.memMap(second, size, mem, 0), mtiaSuccess);
    EXPECT_TRUE(hasPattern(second, size, 7));
    ASSERT_EQ(d.memUnmap(second, size), mtiaSuccess);
    // A part of the memory, at an offset.
    ASSERT_EQ(d.memMap(first, kGran, mem, kGran), mtiaSuccess) << lastError();
    EXPECT_EQ(static_cast<uint32_t*>(first)[0],
              static_cast<uint32_t>(7 + (kGran / 4) * 2654435761u));
    ASSERT_EQ(d.memUnmap(first, kGran), mtiaSuccess);
    EXPECT_EQ(d.memRelease(mem), mtiaSuccess);
    EXPECT_EQ(d.vaRelease(0, first, size), mtiaSuccess);
    EXPECT_EQ(d.vaRelease(0, second, size), mtiaSuccess);
}

TEST_F(SimMemory, AdjacentMappingsUnmapTogether) {
    void* va = nullptr;
    ASSERT_EQ(d.vaReserve(0, 3 * kGran, 0, &va), mtiaSuccess);
    mtiaDrvMem a = nullptr, b = nullptr;
    ASSERT_EQ(d.memCreate(0, kGran, &a), mtiaSuccess);
    ASSERT_EQ(d.memCreate(0, 2 * kGran, &b), mtiaSuccess);
    char* base = static_cast<char*>(va);
    ASSERT_EQ(d.memMap(base, kGran, a, 0), mtiaSuccess);
    ASSERT_EQ(d.memMap(base + kGran, 2 * kGran, b, 0), mtiaSuccess);
    std::memset(base, 1, 3 * kGran);  // one contiguous range across both
    EXPECT_EQ(d.memUnmap(base, 2 * kGran), mtiaErrorInvalidValue);  // ends inside b
    EXPECT_EQ(d.memUnmap(base + kGran, kGran), mtiaErrorInvalidValue);
    EXPECT_EQ(d.memUnmap(base, 3 * kGran), mtiaSuccess) << lastError();
    EXPECT_EQ(d.memRelease(a), mtiaSuccess);
    EXPECT_EQ(d.memRelease(b), mtiaSuccess);
    EXPECT_EQ(d.vaRelease(0, va, 3 * kGran), mtiaSuccess);
}

TEST_F(SimMemory, AlignedReservations) {
    void* va = nullptr;
    const uint64_t align = 64 * kGran;
    ASSERT_EQ(d.vaReserve(0, kGran, align, &va), mtiaSuccess) << lastError();
    EXPECT_EQ(reinterpret_cast<uint64_t>(va) % align, 0u);
    EXPECT_EQ(d.vaRelease(0, va, kGran), mtiaSuccess);
}

TEST_F(SimMemory, CapacityAndMemGetInfo) {
    uint64_t free0 = 0, total = 0;
    ASSERT_EQ(d.memGetInfo(0, &free0, &total), mtiaSuccess);
    EXPECT_EQ(total, info(0).totalMemory);
    mtiaDrvMem mem = nullptr;
    ASSERT_EQ(d.memCreate(0, 4 * kGran, &mem), mtiaSuccess);
    uint64_t free1 = 0;
    ASSERT_EQ(d.memGetInfo(0, &free1, &total), mtiaSuccess);
    EXPECT_EQ(free1, free0 - 4 * kGran);
    // More than is left: refused with the numbers.
    mtiaDrvMem big = nullptr;
    EXPECT_EQ(d.memCreate(0, free1 + kGran, &big), mtiaErrorMemoryAllocation);
    const std::string message = lastError();
    EXPECT_NE(message.find("requested " + std::to_string(free1 + kGran)), std::string::npos)
        << message;
    EXPECT_NE(message.find("total"), std::string::npos) << message;
    // Exactly what is left fits (the memory is sparse: this costs no host RAM), then nothing does.
    ASSERT_EQ(d.memCreate(0, free1, &big), mtiaSuccess) << lastError();
    uint64_t none = 1;
    ASSERT_EQ(d.memGetInfo(0, &none, &total), mtiaSuccess);
    EXPECT_EQ(none, 0u);
    mtiaDrvMem extra = nullptr;
    EXPECT_EQ(d.memCreate(0, kGran, &extra), mtiaErrorMemoryAllocation);
    EXPECT_EQ(d.memRelease(big), mtiaSuccess);
    EXPECT_EQ(d.memRelease(mem), mtiaSuccess);
    ASSERT_EQ(d.memGetInfo(0, &free1, &total), mtiaSuccess);
    EXPECT_EQ(free1, free0);
    if (deviceCount() > 1) {
        // Capacity is per device.
        uint64_t other = 0;
        ASSERT_EQ(d.memGetInfo(1, &other, &total), mtiaSuccess);
        EXPECT_EQ(other, total);
    }
    EXPECT_EQ(d.memGetInfo(0, nullptr, &total), mtiaErrorInvalidValue);
    EXPECT_EQ(d.memGetInfo(0, &free1, nullptr), mtiaErrorInvalidValue);
    EXPECT_EQ(d.memGetInfo(99, &free1, &total), mtiaErrorInvalidDevice);
}

TEST_F(SimMemory, ReleasePunchesTheHole) {
    const uint64_t size = 16 * kGran;
    void* va = nullptr;
    mtiaDrvMem mem = nullptr;
    ASSERT_EQ(d.vaReserve(0, size, 0, &va), mtiaSuccess);
    ASSERT_EQ(d.memCreate(0, size, &mem), mtiaSuccess);
    ASSERT_EQ(d.memMap(va, size, mem, 0), mtiaSuccess);
    const long long before = memfdAllocatedBytes(0);
    ASSERT_GE(before, 0) << "memfd of device 0 not found";
    std::memset(va, 0x77, size);
    const long long touched = memfdAllocatedBytes(0);
    EXPECT_GE(touched, before + static_cast<long long>(size));
    ASSERT_EQ(d.memUnmap(va, size), mtiaSuccess);
    ASSERT_EQ(d.memRelease(mem), mtiaSuccess);
    // The host pages are gone ...
    EXPECT_LE(memfdAllocatedBytes(0), touched - static_cast<long long>(size));
    // ... and memory created in their place reads as zeros.
    ASSERT_EQ(d.memCreate(0, size, &mem), mtiaSuccess);
    ASSERT_EQ(d.memMap(va, size, mem, 0), mtiaSuccess);
    const auto* bytes = static_cast<const unsigned char*>(va);
    bool zero = true;
    for (uint64_t i = 0; i < size; i += 4096) zero = zero && bytes[i] == 0;
    EXPECT_TRUE(zero);
    ASSERT_EQ(d.memUnmap(va, size), mtiaSuccess);
    ASSERT_EQ(d.memRelease(mem), mtiaSuccess);
    ASSERT_EQ(d.vaRelease(0, va, size), mtiaSuccess);
}

TEST_F(SimMemory, ReserveErrors) {
    void* va = nullptr;
    EXPECT_EQ(d.vaReserve(0, 0, 0, &va), mtiaErrorInvalidValue);
    EXPECT_EQ(d.vaReserve(0, kGran + 4096, 0, &va), mtiaErrorInvalidValue);
    EXPECT_EQ(d.vaReserve(0, kGran, 3 * kGran, &va), mtiaErrorInvalidValue);  // not a power of two
    EXPECT_EQ(d.vaReserve(0, kGran, kGran / 2, &va),
              mtiaErrorInvalidValue);  // below the granularity
    EXPECT_EQ(d.vaReserve(0, kGran, 0, nullptr), mtiaErrorInvalidValue);
    EXPECT_EQ(d.vaReserve(-1, kGran, 0, &va), mtiaErrorInvalidDevice);
    EXPECT_EQ(d.vaReserve(64, kGran, 0, &va), mtiaErrorInvalidDevice);
    const uint64_t span = info(0).vaSize;
    EXPECT_EQ(d.vaReserve(0, span + kGran, 0, &va), mtiaErrorMemoryAllocation);
    EXPECT_EQ(d.vaReserve(0, UINT64_MAX / kGran * kGran, 0, &va), mtiaErrorMemoryAllocation);
    EXPECT_EQ(d.vaReserve(0, kGran, uint64_t{1} << 63, &va), mtiaErrorMemoryAllocation);
    EXPECT_NE(lastError().find("no free range"), std::string::npos) << lastError();

    ASSERT_EQ(d.vaReserve(0, 2 * kGran, 0, &va), mtiaSuccess);
    EXPECT_EQ(d.vaRelease(0, va, kGran), mtiaErrorInvalidValue);  // not the whole reservation
    EXPECT_EQ(d.vaRelease(0, static_cast<char*>(va) + kGran, kGran), mtiaErrorInvalidValue);
    EXPECT_EQ(d.vaRelease(0, nullptr, kGran), mtiaErrorInvalidValue);
    if (deviceCount() > 1) {  // another device's
        EXPECT_EQ(d.vaRelease(1, va, 2 * kGran), mtiaErrorInvalidValue);
    }
    mtiaDrvMem mem = nullptr;
    ASSERT_EQ(d.memCreate(0, kGran, &mem), mtiaSuccess);
    ASSERT_EQ(d.memMap(static_cast<char*>(va) + kGran, kGran, mem, 0), mtiaSuccess);
    EXPECT_EQ(d.vaRelease(0, va, 2 * kGran), mtiaErrorIllegalState);
    EXPECT_NE(lastError().find("still has mappings"), std::string::npos) << lastError();
    ASSERT_EQ(d.memUnmap(static_cast<char*>(va) + kGran, kGran), mtiaSuccess);
    EXPECT_EQ(d.vaRelease(0, va, 2 * kGran), mtiaSuccess);
    EXPECT_EQ(d.vaRelease(0, va, 2 * kGran), mtiaErrorInvalidValue);  // twice
    EXPECT_EQ(d.memRelease(mem), mtiaSuccess);
}

TEST_F(SimMemory, CreateAndReleaseErrors) {
    mtiaDrvMem mem = nullptr;
    EXPECT_EQ(d.memCreate(0, 0, &mem), mtiaErrorInvalidValue);
    EXPECT_EQ(d.memCreate(0, kGran - 1, &mem), mtiaErrorInvalidValue);
    EXPECT_EQ(d.memCreate(0, kGran, nullptr), mtiaErrorInvalidValue);
    EXPECT_EQ(d.memCreate(-3, kGran, &mem), mtiaErrorInvalidDevice);
    EXPECT_EQ(d.memRelease(nullptr), mtiaErrorInvalidHandle);
    int notMemory = 0;
    EXPECT_EQ(d.memRelease(reinterpret_cast<mtiaDrvMem>(&notMemory)), mtiaErrorInvalidHandle);
    ASSERT_EQ(d.memCreate(0, kGran, &mem), mtiaSuccess);
    void* va = nullptr;
    ASSERT_EQ(d.vaReserve(0, kGran, 0, &va), mtiaSuccess);
    ASSERT_EQ(d.memMap(va, kGran, mem, 0), mtiaSuccess);
    EXPECT_EQ(d.memRelease(mem), mtiaErrorIllegalState);
    EXPECT_NE(lastError().find("still mapped"), std::string::npos) << lastError();
    ASSERT_EQ(d.memUnmap(va, kGran), mtiaSuccess);
    EXPECT_EQ(d.memRelease(mem), mtiaSuccess);
    EXPECT_EQ(d.memRelease(mem), mtiaErrorInvalidHandle);  // released handles are dead
    EXPECT_EQ(d.vaRelease(0, va, kGran), mtiaSuccess);
}

TEST_F(SimMemory, MapErrors) {
    void* va = nullptr;
    void* next = nullptr;
    ASSERT_EQ(d.vaReserve(0, 2 * kGran, 0, &va), mtiaSuccess);
    ASSERT_EQ(d.vaReserve(0, 2 * kGran, 0, &next), mtiaSuccess);
    mtiaDrvMem mem = nullptr;
    ASSERT_EQ(d.memCreate(0, 2 * kGran, &mem), mtiaSuccess);
    char* p = static_cast<char*>(va);
    int notMemory = 0;
    EXPECT_EQ(d.memMap(va, kGran, reinterpret_cast<mtiaDrvMem>(&notMemory), 0),
              mtiaErrorInvalidHandle);
    EXPECT_EQ(d.memMap(va, kGran, nullptr, 0), mtiaErrorInvalidHandle);
    EXPECT_EQ(d.memMap(nullptr, kGran, mem, 0), mtiaErrorInvalidValue);
    EXPECT_EQ(d.memMap(p + 4096, kGran, mem, 0), mtiaErrorInvalidValue);    // unaligned address
    EXPECT_EQ(d.memMap(va, kGran + 4096, mem, 0), mtiaErrorInvalidValue);   // unaligned size
    EXPECT_EQ(d.memMap(va, 0, mem, 0), mtiaErrorInvalidValue);              // empty
    EXPECT_EQ(d.memMap(va, kGran, mem, 4096), mtiaErrorInvalidValue);       // unaligned offset
    EXPECT_EQ(d.memMap(va, 2 * kGran, mem, kGran), mtiaErrorInvalidValue);  // past the memory
    EXPECT_EQ(d.memMap(va, kGran, mem, UINT64_MAX / kGran * kGran), mtiaErrorInvalidValue);
    void* released = nullptr;
    ASSERT_EQ(d.vaReserve(0, kGran, 0, &released), mtiaSuccess);
    ASSERT_EQ(d.vaRelease(0, released, kGran), mtiaSuccess);
    EXPECT_EQ(d.memMap(released, kGran, mem, 0),
              mtiaErrorInvalidValue);  // device range, but not reserved
    int host[16];
    EXPECT_EQ(d.memMap(host, kGran, mem, 0), mtiaErrorInvalidValue);
    // Two neighbouring reservations are still two: a mapping may not straddle them.
    if (static_cast<char*>(next) == p + 2 * kGran) {
        mtiaDrvMem wide = nullptr;
        ASSERT_EQ(d.memCreate(0, 4 * kGran, &wide), mtiaSuccess);
        EXPECT_EQ(d.memMap(va, 4 * kGran, wide, 0), mtiaErrorInvalidValue);
        EXPECT_EQ(d.memRelease(wide), mtiaSuccess);
    }
    ASSERT_EQ(d.memMap(va, kGran, mem, 0), mtiaSuccess);
    EXPECT_EQ(d.memMap(va, kGran, mem, kGran), mtiaErrorIllegalState);  // already mapped
    EXPECT_EQ(d.memMap(va, 2 * kGran, mem, 0), mtiaErrorIllegalState);  // partly mapped
    if (deviceCount() > 1) {
        // Memory of device 1 cannot be mapped into device 0's reservation.
        mtiaDrvMem other = nullptr;
        ASSERT_EQ(d.memCreate(1, kGran, &other), mtiaSuccess);
        EXPECT_EQ(d.memMap(p + kGran, kGran, other, 0), mtiaErrorInvalidValue);
        EXPECT_NE(lastError().find("device 1"), std::string::npos) << lastError();
        EXPECT_EQ(d.memRelease(other), mtiaSuccess);
    }
    // Unmap errors.
    EXPECT_EQ(d.memUnmap(p + kGran, kGran), mtiaErrorInvalidValue);  // reserved, not mapped
    EXPECT_EQ(d.memUnmap(host, kGran), mtiaErrorInvalidValue);
    EXPECT_EQ(d.memUnmap(nullptr, kGran), mtiaErrorInvalidValue);
    EXPECT_EQ(d.memUnmap(va, 0), mtiaErrorInvalidValue);
    EXPECT_EQ(d.memUnmap(va, 2 * kGran), mtiaErrorInvalidValue);
    EXPECT_EQ(d.memUnmap(va, kGran), mtiaSuccess);
    EXPECT_EQ(d.memUnmap(va, kGran), mtiaErrorInvalidValue);  // twice
    EXPECT_EQ(d.memRelease(mem), mtiaSuccess);
    EXPECT_EQ(d.vaRelease(0, va, 2 * kGran), mtiaSuccess);
    EXPECT_EQ(d.vaRelease(0, next, 2 * kGran), mtiaSuccess);
}

TEST_F(SimMemory, ConcurrentAllocationIsConsistent) {
    // Several threads create, map, touch and release at once; every byte stays where it was
    // written.
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
            for (int round = 0; round < 20; ++round) {
                DeviceBuffer buffer(t % deviceCount(), kGran);
                fillPattern(buffer.data(), kGran, static_cast<uint32_t>(t * 100 + round));
                if (!hasPattern(buffer.data(), kGran, static_cast<uint32_t>(t * 100 + round)))
                    failures++;
            }
        });
    }
    for (std::thread& t : threads) t.join();
    EXPECT_EQ(failures.load(), 0);
}

// Driver ABI 1.7: the words the runtime's allocator writes instead of calling memReportAllocated
// are this process's registry slot words, the ones memReportAllocated writes (after the first
// memCreate; NULL and NULL before, which this process is past once it holds a buffer).
TEST_F(SimMemory, AllocatedWordsAreTheOnesMemReportAllocatedWrites) {
    DeviceBuffer buf(0, kGran);
    uint64_t* allocated = nullptr;
    uint64_t* peak = nullptr;
    ASSERT_EQ(d.memGetAllocatedWords(0, &allocated, &peak), mtiaSuccess) << lastError();
    ASSERT_NE(allocated, nullptr);
    ASSERT_NE(peak, nullptr);
    EXPECT_NE(allocated, peak);
    ASSERT_EQ(d.memReportAllocated(0, 12345), mtiaSuccess);
    EXPECT_EQ(__atomic_load_n(allocated, __ATOMIC_ACQUIRE), 12345u);
    EXPECT_GE(__atomic_load_n(peak, __ATOMIC_ACQUIRE), 12345u);
    ASSERT_EQ(d.memReportAllocated(0, 0), mtiaSuccess);
    EXPECT_EQ(__atomic_load_n(allocated, __ATOMIC_ACQUIRE), 0u);
    // Another device has words of its own.
    if (deviceCount() > 1) {
        DeviceBuffer other(1, kGran);
        uint64_t* allocated1 = nullptr;
        uint64_t* peak1 = nullptr;
        ASSERT_EQ(d.memGetAllocatedWords(1, &allocated1, &peak1), mtiaSuccess) << lastError();
        EXPECT_NE(allocated1, allocated);
        EXPECT_NE(allocated1, nullptr);
    }
    EXPECT_EQ(d.memGetAllocatedWords(0, nullptr, &peak), mtiaErrorInvalidValue);
    EXPECT_EQ(d.memGetAllocatedWords(99, &allocated, &peak), mtiaErrorInvalidDevice);
    const uint32_t* word = nullptr;
    EXPECT_EQ(d.deviceGetFaultWord(0, nullptr), mtiaErrorInvalidValue);
    EXPECT_EQ(d.deviceGetFaultWord(99, &word), mtiaErrorInvalidDevice);
}
