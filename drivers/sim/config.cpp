#include "config.hpp"

#include "kernels.hpp"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cstdlib>

#include <unistd.h>

namespace mtia::sim {

static_assert(kMaxKernelArgs == MTIA_SIM_MAX_KERNEL_ARGS && kMaxKernelArgBytes == kMaxArgumentBytes,
              "the settings' maxima are what a launch can carry");

std::optional<uint64_t> parseUnsigned(std::string_view text) {
    if (text.empty() || !std::isdigit(static_cast<unsigned char>(text.front())))
        return std::nullopt;
    uint64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return value;
}

std::optional<uint64_t> parseByteSize(std::string_view text) {
    size_t digits = 0;
    while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
    const std::optional<uint64_t> number = parseUnsigned(text.substr(0, digits));
    if (!number) return std::nullopt;
    std::string suffix;
    for (char c : text.substr(digits))
        suffix += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    unsigned shift = 0;
    if (!suffix.empty() && suffix != "B") {
        switch (suffix.front()) {
        case 'K': shift = 10; break;
        case 'M': shift = 20; break;
        case 'G': shift = 30; break;
        case 'T': shift = 40; break;
        default: return std::nullopt;
        }
        const std::string_view unit = std::string_view(suffix).substr(1);
        if (!unit.empty() && unit != "B" && unit != "IB") return std::nullopt;
    }
    if (*number > (UINT64_MAX >> shift)) return std::nullopt;
    return *number << shift;
}

uint64_t hostLastLevelCacheBytes() {
    static const uint64_t bytes = [] {
        for (int name : {_SC_LEVEL3_CACHE_SIZE, _SC_LEVEL2_CACHE_SIZE}) {
            const long v = sysconf(name);
            if (v > 0) return static_cast<uint64_t>(v);
        }
        return kDefaultL2CacheBytes;
    }();
    return bytes;
}

namespace {

bool parseIntVar(const EnvLookup& lookup, const char* name, int32_t lo, int32_t hi, int32_t& out,
                 std::string& error) {
    const std::optional<std::string> text = lookup(name);
    if (!text) return true;
    const std::optional<uint64_t> value = parseUnsigned(*text);
    if (!value || *value < static_cast<uint64_t>(lo) || *value > static_cast<uint64_t>(hi)) {
        error = fmt::format("{}='{}' is not valid: expected a whole number from {} to {}", name,
                            *text, lo, hi);
        return false;
    }
    out = static_cast<int32_t>(*value);
    return true;
}

bool parseMemory(const EnvLookup& lookup, uint64_t& out, std::string& error) {
    const std::optional<std::string> text = lookup("MTIA_SIM_MEMORY");
    if (!text) return true;
    const std::optional<uint64_t> value = parseByteSize(*text);
    if (!value || *value < kMinMemory || *value > kMaxMemory) {
        error = fmt::format("MTIA_SIM_MEMORY='{}' is not valid: expected bytes per device from "
                            "1MiB to 4TiB, as a number with an "
                            "optional suffix K, M, G or T (optionally followed by iB or B), e.g. "
                            "1073741824, 512MiB, 1G, 16GiB",
                            *text);
        return false;
    }
    // Capacity is handed out in granules; a size that is not a whole number of them could never be
    // used.
    out = (*value + kGranularity - 1) / kGranularity * kGranularity;
    return true;
}

bool parseBytesVar(const EnvLookup& lookup, const char* name, uint64_t lo, uint64_t hi,
                   uint64_t& out, std::string& error) {
    const std::optional<std::string> text = lookup(name);
    if (!text) return true;
    const std::optional<uint64_t> value = parseByteSize(*text);
    if (!value || *value < lo || *value > hi) {
        error = fmt::format("{}='{}' is not valid: expected bytes from {} to {}, as a number with "
                            "an optional suffix K, M, G or T (optionally followed by iB or B), "
                            "e.g. 4096, 64KiB, 32M",
                            name, *text, lo, hi);
        return false;
    }
    out = *value;
    return true;
}

}  // namespace

ConfigResult parseConfig(const EnvLookup& lookup) {
    ConfigResult result;
    Config config;
    int32_t bind = 0;
    if (!parseIntVar(lookup, "MTIA_SIM_DEVICES", 0, kMaxDevices, config.devices, result.error) ||
        !parseMemory(lookup, config.memoryBytes, result.error) ||
        !parseIntVar(lookup, "MTIA_SIM_ENGINES", 1, kMaxEngines, config.engines, result.error) ||
        !parseIntVar(lookup, "MTIA_SIM_BIND_ENGINES", 0, 1, bind, result.error) ||
        !parseIntVar(lookup, "MTIA_SIM_QUEUE_DEPTH", 1, kMaxQueueDepth, config.queueDepth,
                     result.error) ||
        !parseIntVar(lookup, "MTIA_SIM_MAX_KERNEL_ARGS", 1, kMaxKernelArgs, config.maxKernelArgs,
                     result.error) ||
        !parseIntVar(lookup, "MTIA_SIM_MAX_KERNEL_BUFFERS", 1, kMaxKernelArgs,
                     config.maxKernelBuffers, result.error) ||
        !parseBytesVar(lookup, "MTIA_SIM_MAX_KERNEL_ARG_BYTES", 1, kMaxKernelArgBytes,
                       config.maxKernelArgBytes, result.error) ||
        !parseBytesVar(lookup, "MTIA_SIM_L2_CACHE", 0, kMaxL2CacheBytes, config.l2CacheBytes,
                       result.error)) {
        return result;
    }
    config.bindEngines = bind != 0;
    if (std::optional<std::string> faults = lookup("MTIA_SIM_FAULTS")) {
        if (!parseFaultPlan(*faults, config.faults, result.error)) return result;
        for (const SlowRule& rule : config.faults.slow) {
            if (rule.device >= config.devices) {
                result.error = fmt::format("MTIA_SIM_FAULTS='{}': slow rule for device {} is not "
                                           "valid: the machine has {} device(s)",
                                           *faults, rule.device, config.devices);
                return result;
            }
        }
    }
    if (std::optional<std::string> machine = lookup("MTIA_SIM_MACHINE")) {
        if (machine->size() > kMaxMachineNameBytes) {
            result.error = fmt::format("MTIA_SIM_MACHINE is too long: {} bytes, at most {} bytes",
                                       machine->size(), kMaxMachineNameBytes);
            return result;
        }
        config.machine = *machine;
    }
    result.config = std::move(config);
    return result;
}

ConfigResult parseConfig(const std::map<std::string, std::string>& variables) {
    return parseConfig([&](const char* name) -> std::optional<std::string> {
        auto it = variables.find(name);
        if (it == variables.end()) return std::nullopt;
        return it->second;
    });
}

ConfigResult configFromEnvironment() {
    return parseConfig([](const char* name) -> std::optional<std::string> {
        const char* value = std::getenv(name);
        if (value == nullptr) return std::nullopt;
        return std::string(value);
    });
}

}  // namespace mtia::sim
