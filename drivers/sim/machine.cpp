#include "machine.hpp"

#include "error.hpp"

#include <mutex>

namespace mtia::sim {

std::atomic<Machine*> Machine::instance_{nullptr};

Machine::Machine(Config config)
    : config_(std::move(config)), faults_(config_.faults), registry_(config_) {
    devices_.reserve(static_cast<size_t>(config_.devices));
    for (int32_t i = 0; i < config_.devices; ++i)
        devices_.push_back(std::make_unique<Device>(*this, i, config_, faults_));
}

mtiaError_t Machine::initialize() {
    static std::mutex mu;
    std::lock_guard lock(mu);
    if (instance() != nullptr) return mtiaSuccess;
    ConfigResult parsed = configFromEnvironment();
    if (!parsed.config) return reportError(mtiaErrorInvalidValue, "init: " + parsed.error);
    instance_.store(new Machine(std::move(*parsed.config)), std::memory_order_release);
    return mtiaSuccess;
}

Device* Machine::deviceForAddress(const void* p) const {
    for (const auto& device : devices_) {
        if (device->memory().inAddressRange(p)) return device.get();
    }
    return nullptr;
}

}  // namespace mtia::sim
