// Per-device context: the driver's view of the device, its default stream
// and its allocator. Streams and memory start lazily, so reading properties
// never starts a device.
#pragma once

#include "allocator/allocator_context.hpp"
#include "allocator/device_allocator.hpp"
#include "platform/driver/driver.hpp"
#include "streams/stream.hpp"

#include <atomic>
#include <memory>
#include <mutex>
#include <set>

namespace mtia {

class Device {
public:
    Device(const driver::Driver& driver, int ordinal, int32_t driverDevice,
           allocator::AllocatorContext& allocContext);

    int ordinal() const noexcept { return ordinal_; }
    int32_t driverDevice() const noexcept { return driverDevice_; }
    const mtiaDrvDeviceInfo& info() const noexcept { return info_; }
    const driver::Driver& driver() const noexcept { return driver_; }

    // The device's default stream; created (starting the device) on first use.
    // Its handle is registered in the runtime's stream table by the caller.
    // Thread-safe; lock-free once created.
    streams::Stream& defaultStream();
    std::shared_ptr<streams::Stream> defaultStreamShared();
    // The default stream's id (streams::Stream::id), or 0 while it has not been created (nothing
    // can have used it then). Creates nothing. Thread-safe, lock-free, never throws.
    int64_t defaultStreamIdIfCreated() const noexcept {
        const streams::Stream* s = defaultReady_.load(std::memory_order_acquire);
        return s != nullptr ? s->id() : 0;
    }
    // The device's caching allocator, created on first use (it starts nothing on the device).
    allocator::DeviceAllocator& memory() {
        if (allocator::DeviceAllocator* m = memory_.load(std::memory_order_acquire)) [[likely]]
            return *m;
        return createMemory();
    }
    // Like memory(), but null until something asked for it.
    allocator::DeviceAllocator* memoryIfStarted() const {
        return memory_.load(std::memory_order_acquire);
    }
    // Whether ptr lies in the device's address range (false when the driver does not say).
    // Lock-free; inline: every mtiaFree asks.
    bool ownsAddress(const void* ptr) const noexcept {
        const auto p = reinterpret_cast<uintptr_t>(ptr);
        return info_.vaSize != 0 && p >= info_.vaBase && p - info_.vaBase < info_.vaSize;
    }

    // Grants (enable) or revokes kernel access from this device to peer's memory.
    // Returns false when it was already in that state. Throws NotSupported when
    // the driver's devices cannot access peers.
    bool setPeerAccess(const Device& peer, bool enable);
    // Whether this device's kernels may access peer's memory (mtiaDeviceEnablePeerAccess).
    // Thread-safe.
    bool peerAccessEnabled(const Device& peer) const;

    // mtiaDeviceReset: forgets which peers this device's kernels may access (the driver's reset
    // revoked them). Thread-safe.
    void forgetPeers();
    // Whether the device has a sticky fault, without raising it. Thread-safe.
    bool faulted() const {
        if (faultWord_ != nullptr) return __atomic_load_n(faultWord_, __ATOMIC_ACQUIRE) != 0;
        return driver_.ops().deviceGetStatus(driverDevice_) != mtiaSuccess;
    }

    // Throws the device's sticky fault, if it has one. Inline: every allocation asks.
    // One acquire load when the driver shares the device's fault word (driver ABI 1.7), else a
    // call.
    void checkHealthy() const {
        if (faultWord_ != nullptr && __atomic_load_n(faultWord_, __ATOMIC_ACQUIRE) == 0) [[likely]]
            return;
        if (driver_.ops().deviceGetStatus(driverDevice_) != mtiaSuccess) [[unlikely]]
            raiseFault();
    }
    // Waits for all work queued on the device, then reports a sticky fault.
    void synchronize() const;

private:
    [[noreturn, gnu::noinline, gnu::cold]] void raiseFault() const;
    allocator::DeviceAllocator& createMemory();

    const driver::Driver& driver_;
    const int ordinal_;
    const int32_t driverDevice_;
    const mtiaDrvDeviceInfo info_;
    const uint32_t* faultWord_ =
        nullptr;  // the driver's sticky-fault word (driver ABI 1.7), or null
    mutable std::mutex mu_;
    std::shared_ptr<streams::Stream> defaultStream_;  // written once, before defaultReady_ is set
    std::atomic<streams::Stream*> defaultReady_{nullptr};
    allocator::AllocatorContext& allocContext_;
    std::unique_ptr<allocator::DeviceAllocator>
        memoryOwner_;  // written once, under mu_, before memory_
    std::atomic<allocator::DeviceAllocator*> memory_{nullptr};
    std::set<int> peers_;  // runtime ordinals this device's kernels may access
};

}  // namespace mtia
