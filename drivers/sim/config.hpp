// The simulator's configuration: read once from the environment by init, but
// parsed by a pure function so that every accepted and rejected form can be
// tested without touching the process environment.
#pragma once

#include "faults.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace mtia::sim {

inline constexpr uint64_t kMiB = 1ull << 20;
inline constexpr uint64_t kGiB = 1ull << 30;
inline constexpr uint64_t kTiB = 1ull << 40;
// Physical allocations, reservations and mappings are multiples of this.
inline constexpr uint64_t kGranularity = 2 * kMiB;
// The launch limits every simulated device reports and enforces.
inline constexpr uint64_t kSharedMemPerBlock = 48 * 1024;
inline constexpr uint32_t kMaxThreadsPerBlock = 1024;
inline constexpr uint32_t kMaxBlockDim[3] = {1024, 1024, 64};
inline constexpr uint32_t kMaxGridDim[3] = {2147483647u, 65535u, 65535u};
inline constexpr int32_t kMaxDevices = 64;
inline constexpr int32_t kMaxEngines = 64;
inline constexpr uint64_t kMinMemory = kMiB;
// Each device reserves four times its memory as address space; 4 TiB keeps a full machine of
// devices inside the 128 TiB a process can address.
inline constexpr uint64_t kMaxMemory = 4 * kTiB;
// The longest MTIA_SIM_MACHINE, in bytes: what mtiaDrvMachineSpec::machine holds (mtia_driver.h)
// less its terminating NUL. The runtime and mtia-smi both check it here, so they accept the same
// names.
inline constexpr size_t kMaxMachineNameBytes = 255;
// Commands a queue holds before a host thread's submit blocks (MTIA_SIM_QUEUE_DEPTH): CUDA's launch
// queue is of this order. Each pending command takes a 128-byte slot.
inline constexpr int32_t kDefaultQueueDepth = 1024;
inline constexpr int32_t kMaxQueueDepth = 1 << 20;
// One launch's limits (MTIA_SIM_MAX_KERNEL_ARGS, _ARG_BYTES, _BUFFERS). The maxima are what the
// driver can carry (mtia_sim_kernel.h, kernels.hpp's kMaxArgumentBytes). The simulated device has
// no IO-buffer limit of its own, so every argument may be a buffer by default.
inline constexpr int32_t kMaxKernelArgs = 32;
inline constexpr uint64_t kMaxKernelArgBytes = 4096;
// The last-level cache when the host does not say (sysconf answers 0 in some containers): a
// server CPU's L3 is of this order.
inline constexpr uint64_t kDefaultL2CacheBytes = 32 * kMiB;
inline constexpr uint64_t kMaxL2CacheBytes = kTiB;

// The host's last-level cache in bytes (L3, else L2, else kDefaultL2CacheBytes): simulated
// kernels run on host CPUs, so this is the cache a benchmark must flush. Read once.
uint64_t hostLastLevelCacheBytes();

struct Config {
    int32_t devices = 2;
    uint64_t memoryBytes = 16 * kGiB;  // per device, a multiple of kGranularity
    int32_t engines = 4;
    bool bindEngines = false;
    int32_t queueDepth = kDefaultQueueDepth;  // MTIA_SIM_QUEUE_DEPTH, 1 to kMaxQueueDepth
    FaultPlan faults;
    std::string machine;  // MTIA_SIM_MACHINE: names the simulated machine (part of the uuids)
    // Launch limits and cache size: not part of the machine's identity (like the queue depth),
    // so processes with different settings still share one machine and its registry.
    int32_t maxKernelArgs = kMaxKernelArgs;             // MTIA_SIM_MAX_KERNEL_ARGS
    int32_t maxKernelBuffers = kMaxKernelArgs;          // MTIA_SIM_MAX_KERNEL_BUFFERS
    uint64_t maxKernelArgBytes = kMaxKernelArgBytes;    // MTIA_SIM_MAX_KERNEL_ARG_BYTES
    uint64_t l2CacheBytes = hostLastLevelCacheBytes();  // MTIA_SIM_L2_CACHE
};

// Returns the value of an environment variable, or nullopt when it is not set.
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;

struct ConfigResult {
    std::optional<Config> config;  // set on success
    std::string error;             // names the variable, the bad value and what is accepted
};

ConfigResult parseConfig(const EnvLookup& lookup);
ConfigResult parseConfig(const std::map<std::string, std::string>& variables);
ConfigResult configFromEnvironment();

// Decimal digits only: no sign, no spaces, no trailing characters, no overflow.
std::optional<uint64_t> parseUnsigned(std::string_view text);
// Bytes with an optional binary suffix: 1073741824, 1G, 1GB, 1GiB, 512MiB, 64k (K, M, G, T in any
// case).
std::optional<uint64_t> parseByteSize(std::string_view text);

}  // namespace mtia::sim
