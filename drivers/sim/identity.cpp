#include "identity.hpp"

#include "queue.hpp"
#include "topology.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstring>

namespace mtia::sim {
namespace {

// The splitmix64 finaliser: cheap, and every input bit reaches every output bit.
uint64_t mix64(uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// Two independently seeded 64-bit lanes: enough to keep uuids of different configurations apart.
class Hash128 {
public:
    void add(uint64_t value) {
        hi_ = mix64(hi_ ^ value);
        lo_ = mix64(lo_ + value * 0xff51afd7ed558ccdull);
    }
    void add(const std::string& text) {
        add(text.size());
        for (unsigned char c : text) add(c);
    }
    uint64_t hi() const { return hi_; }
    uint64_t lo() const { return lo_; }

private:
    uint64_t hi_ = 0x6d7469612d73696dull;  // "mtia-sim"
    uint64_t lo_ = 0x2d646576696365ull;    // "-device"
};

}  // namespace

std::array<uint8_t, 16> deviceUuid(const Config& config, int32_t index) {
    Hash128 h;
    h.add(static_cast<uint64_t>(config.devices));
    h.add(config.memoryBytes);
    h.add(static_cast<uint64_t>(config.engines));
    h.add(config.machine);
    h.add(static_cast<uint64_t>(index));
    std::array<uint8_t, 16> uuid{};
    for (int i = 0; i < 8; ++i) {
        uuid[i] = static_cast<uint8_t>(h.hi() >> (56 - 8 * i));
        uuid[8 + i] = static_cast<uint8_t>(h.lo() >> (56 - 8 * i));
    }
    // RFC 9562 version 8 (vendor-specific) and variant bits, so tools print it as a well-formed
    // uuid.
    uuid[6] = static_cast<uint8_t>((uuid[6] & 0x0f) | 0x80);
    uuid[8] = static_cast<uint8_t>((uuid[8] & 0x3f) | 0x80);
    return uuid;
}

std::string devicePciBusId(int32_t index) {
    return fmt::format("0000:{:02x}:00.0", devicePciBus(index));
}

void describeIdentity(const Config& config, int32_t index, mtiaDrvDeviceInfo& info) {
    info = mtiaDrvDeviceInfo{};
    info.structSize = sizeof(info);
    std::snprintf(info.name, sizeof(info.name), "MTIA Sim Device");
    const std::array<uint8_t, 16> uuid = deviceUuid(config, index);
    std::memcpy(info.uuid, uuid.data(), uuid.size());
    std::snprintf(info.pciBusId, sizeof(info.pciBusId), "%s", devicePciBusId(index).c_str());
    info.totalMemory = config.memoryBytes;
    info.engines = config.engines;
    info.major = 2;
    info.minor = 0;
    info.numaNode = Topology::instance().numaNodeOfDevice(index);
    info.maxThreadsPerBlock = static_cast<int32_t>(kMaxThreadsPerBlock);
    for (int i = 0; i < 3; ++i) {
        info.maxThreadsDim[i] = static_cast<int32_t>(kMaxBlockDim[i]);
        info.maxGridSize[i] = static_cast<int32_t>(kMaxGridDim[i]);
    }
    info.pciDomain = 0;
    info.pciBus = devicePciBus(index);
    info.pciDevice = 0;
    info.priorityLeast = kPriorityLeast;
    info.priorityGreatest = kPriorityGreatest;
    info.sharedMemPerBlock = kSharedMemPerBlock;
    info.allocationGranularity = kGranularity;
    info.canAccessPeers = 1;
    info.maxKernelArgs = config.maxKernelArgs;
    info.maxKernelBuffers = config.maxKernelBuffers;
    info.maxKernelArgBytes = config.maxKernelArgBytes;
    info.l2CacheSize = config.l2CacheBytes;
}

}  // namespace mtia::sim
