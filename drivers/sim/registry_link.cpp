#include "registry_link.hpp"

#include "error.hpp"

#include <cstdio>

namespace mtia::sim {
namespace {

mtiaError_t translate(const registry::Status& status) {
    switch (status.code) {
    case registry::Code::Ok: return mtiaSuccess;
    case registry::Code::Permission: return mtiaErrorNotPermitted;
    case registry::Code::NoSpace:
    case registry::Code::SlotsExhausted:
    case registry::Code::OutOfCapacity: return mtiaErrorMemoryAllocation;
    default: return mtiaErrorInitializationError;
    }
}

}  // namespace

RegistryLink::RegistryLink(const Config& config) {
    spec_.name = config.machine;
    spec_.devices = static_cast<uint32_t>(config.devices);
    spec_.memoryBytes = config.memoryBytes;
    spec_.engines = static_cast<uint32_t>(config.engines);
}

mtiaError_t RegistryLink::open(registry::Registry*& out) {
    out = ready_.load(std::memory_order_acquire);
    if (out != nullptr) return mtiaSuccess;
    std::lock_guard lock(mu_);
    if (!registry_) {
        const registry::Status status = registry::Registry::open(spec_, {}, registry_);
        if (!status) return reportError(translate(status), "device registry: " + status.message);
        // Another user took the registry directory's usual name: it works, but the user should know
        // why the registry lies elsewhere and how to get the usual place back.
        if (!registry_->notice().empty())
            std::fprintf(stderr, "mtia: warning: device registry: %s\n",
                         registry_->notice().c_str());
        ready_.store(registry_.get(), std::memory_order_release);
    }
    out = registry_.get();
    return mtiaSuccess;
}

mtiaError_t RegistryLink::reserve(int32_t device, uint64_t bytes) {
    registry::Registry* registry = nullptr;
    if (mtiaError_t err = open(registry); err != mtiaSuccess) return err;
    uint64_t held = 0;
    const registry::Status status = registry->reserve(static_cast<uint32_t>(device), bytes, &held);
    if (status.code == registry::Code::OutOfCapacity) {
        return reportErrorf(mtiaErrorMemoryAllocation,
                            "out of memory on device {}: requested {} bytes, {} bytes used of {} "
                            "total (by every process of "
                            "the machine)",
                            device, bytes, held, registry->capacity(static_cast<uint32_t>(device)));
    }
    if (!status) return reportError(translate(status), "device registry: " + status.message);
    return mtiaSuccess;
}

void RegistryLink::release(int32_t device, uint64_t bytes) {
    if (registry::Registry* registry = ready_.load(std::memory_order_acquire))
        registry->release(static_cast<uint32_t>(device), bytes);
}

mtiaError_t RegistryLink::used(int32_t device, uint64_t& bytes) {
    registry::Registry* registry = nullptr;
    if (mtiaError_t err = open(registry); err != mtiaSuccess) return err;
    bytes = registry->used(static_cast<uint32_t>(device));
    return mtiaSuccess;
}

}  // namespace mtia::sim
