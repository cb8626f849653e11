// One simulated device: its memory, its engines, its queues, its sticky fault
// and the peers whose memory its kernels may touch.
#pragma once

#include "config.hpp"
#include "memory.hpp"
#include "queue.hpp"
#include "scheduler.hpp"

#include <mtia/mtia_driver.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace mtia::sim {

class FaultInjector;
class Machine;

class Device {
public:
    // Cheap: reserves no memory and starts no thread.
    Device(Machine& machine, int32_t index, const Config& config, const FaultInjector& faults);
    Device(const Device&) = delete;
    Device& operator=(const Device&) = delete;

    Machine& machine() const { return machine_; }
    int32_t index() const { return index_; }
    DeviceMemory& memory() { return memory_; }
    const DeviceMemory& memory() const { return memory_; }
    Scheduler& scheduler() { return scheduler_; }

    // Fills every field of info (reserving the address range if that has not happened yet).
    // Errors: mtiaErrorMemoryAllocation (no address space for the range).
    mtiaError_t describe(mtiaDrvDeviceInfo& info);

    bool faulted() const { return faulted_.load(std::memory_order_acquire) != 0; }
    // The fault as a word for the runtime to read in place (driver ABI 1.7, deviceGetFaultWord): 0,
    // then 1 until reset() clears it. std::atomic<uint32_t> is lock-free with uint32_t's layout.
    const uint32_t* faultWord() const { return reinterpret_cast<const uint32_t*>(&faulted_); }
    // Makes the device faulted; the first message and code are kept. code: mtiaErrorIllegalAddress
    // for memory faults of kernels (signals), else mtiaErrorLaunchFailure. Thread-safe.
    void recordFault(std::string message, mtiaError_t code = mtiaErrorLaunchFailure);
    // mtiaSuccess, or the fault's code with its message as this thread's last error.
    mtiaError_t status() const;
    // The fault's code, without a message: mtiaSuccess while healthy. Thread-safe.
    mtiaError_t faultCode() const;

    // deviceReset (driver ABI 1.8): waits until every command submitted to the device completed
    // (on a faulted device they complete without running), then clears the fault and the peers
    // this device's kernels may access. Blocks; not from an engine thread (the caller checks).
    void reset();

    void setPeerAccess(int32_t peer, bool enable);
    // Whether [p, p+bytes) is mapped memory of this device or of a peer with access enabled.
    bool canAccess(const void* p, uint64_t bytes) const;

    // A new queue (priority clamped into [kPriorityGreatest, kPriorityLeast]); starts the engines
    // on the device's first queue.
    std::shared_ptr<Queue> createQueue(int32_t priority);
    // Every queue that may still have work: live ones and destroyed ones still draining.
    std::vector<std::shared_ptr<Queue>> queues();

private:
    Machine& machine_;
    const int32_t index_;
    const Config& config_;
    const FaultInjector& faults_;
    DeviceMemory memory_;
    Scheduler scheduler_;

    // Read by every submission: a line of its own, away from the scheduler state engines write.
    alignas(64) std::atomic<uint32_t> faulted_{0};
    static_assert(std::atomic<uint32_t>::is_always_lock_free &&
                  sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));
    mutable std::mutex faultMu_;
    std::string faultMessage_;
    mtiaError_t faultCode_ = mtiaSuccess;  // guarded by faultMu_

    std::atomic<uint64_t> peers_{0};  // bit p: kernels may access device p's memory

    std::mutex queuesMu_;
    std::vector<std::weak_ptr<Queue>> queues_;
    uint32_t queuesCreated_ = 0;
};

}  // namespace mtia::sim
