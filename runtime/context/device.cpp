#include "runtime/context/device.hpp"

#include "core/error.hpp"

namespace mtia {

Device::Device(const driver::Driver& driver, int ordinal, int32_t driverDevice,
               allocator::AllocatorContext& allocContext)
    : driver_(driver), ordinal_(ordinal), driverDevice_(driverDevice),
      info_(driver.deviceInfo(driverDevice)), allocContext_(allocContext) {
    if (const auto get = driver.ops().deviceGetFaultWord) {
        const uint32_t* word = nullptr;
        if (get(driverDevice, &word) == mtiaSuccess)
            faultWord_ = word;  // else: asked by call, as before 1.6
    }
}

std::shared_ptr<streams::Stream> Device::defaultStreamShared() {
    if (defaultReady_.load(std::memory_order_acquire) != nullptr) return defaultStream_;
    std::lock_guard lock(mu_);
    if (!defaultStream_) {
        defaultStream_ = std::make_shared<streams::Stream>(
            driver_, ordinal_, driverDevice_, info_.priorityLeast, mtiaStreamDefault, true);
        defaultReady_.store(defaultStream_.get(), std::memory_order_release);
    }
    return defaultStream_;
}

streams::Stream& Device::defaultStream() {
    if (streams::Stream* s = defaultReady_.load(std::memory_order_acquire)) return *s;
    return *defaultStreamShared();
}

allocator::DeviceAllocator& Device::createMemory() {
    std::lock_guard lock(mu_);
    if (!memoryOwner_) {
        memoryOwner_ = std::make_unique<allocator::DeviceAllocator>(
            driver_, ordinal_, driverDevice_, info_.totalMemory, info_.allocationGranularity,
            info_.vaSize, allocContext_);
        memory_.store(memoryOwner_.get(), std::memory_order_release);
    }
    return *memoryOwner_;
}

bool Device::setPeerAccess(const Device& peer, bool enable) {
    std::lock_guard lock(mu_);
    if (peers_.contains(peer.ordinal()) == enable) return false;
    if (!info_.canAccessPeers)
        fail(mtiaErrorNotSupported, "devices of driver '{}' cannot access each other's memory",
             driver_.name());
    driver_.check(
        driver_.ops().deviceSetPeerAccess(driverDevice_, peer.driverDevice(), enable ? 1 : 0),
        "changing peer access");
    if (enable)
        peers_.insert(peer.ordinal());
    else
        peers_.erase(peer.ordinal());
    return true;
}

void Device::forgetPeers() {
    std::lock_guard lock(mu_);
    peers_.clear();
}

bool Device::peerAccessEnabled(const Device& peer) const {
    std::lock_guard lock(mu_);
    return peers_.contains(peer.ordinal());
}

void Device::raiseFault() const {
    std::string why;
    if (mtiaError_t s = driver_.deviceStatus(driverDevice_, &why); s != mtiaSuccess)
        driver_.raise(s, fmt::format("device {} has a sticky fault", ordinal_).c_str(), why);
    fail(mtiaErrorUnknown, "device {} reported a fault that went away", ordinal_);
}

void Device::synchronize() const {
    driver_.check(driver_.ops().deviceSynchronize(driverDevice_), "synchronizing the device");
    checkHealthy();
}

}  // namespace mtia
