#include "device.hpp"

#include "error.hpp"
#include "faults.hpp"
#include "identity.hpp"
#include "machine.hpp"
#include "topology.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdio>
#include <cstring>

namespace mtia::sim {

Device::Device(Machine& machine, int32_t index, const Config& config, const FaultInjector& faults)
    : machine_(machine), index_(index), config_(config), faults_(faults),
      memory_(machine.registry(), index, config.memoryBytes),
      scheduler_(*this, config.engines, config.bindEngines) {}

mtiaError_t Device::describe(mtiaDrvDeviceInfo& info) {
    uint64_t vaBase = 0, vaSize = 0;
    if (mtiaError_t err = memory_.addressRange(&vaBase, &vaSize); err != mtiaSuccess) return err;
    describeIdentity(config_, index_, info);
    info.totalMemory = memory_.capacity();
    info.vaBase = vaBase;
    info.vaSize = vaSize;
    return mtiaSuccess;
}

void Device::recordFault(std::string message, mtiaError_t code) {
    {
        std::lock_guard lock(faultMu_);
        if (faulted_.load(std::memory_order_relaxed) != 0) return;
        faultMessage_ = std::move(message);
        faultCode_ = code;
        faulted_.store(1, std::memory_order_release);
    }
    // Host threads sleeping in a full queue's submit give up now with the fault, rather than wait
    // for a queue whose head may never finish (a host function that waits for something else).
    for (const std::shared_ptr<Queue>& queue : queues()) queue->wakeHosts();
}

mtiaError_t Device::status() const {
    if (!faulted()) return mtiaSuccess;
    std::lock_guard lock(faultMu_);
    return reportErrorf(faultCode_, "device {} has a sticky fault: {}", index_, faultMessage_);
}

mtiaError_t Device::faultCode() const {
    if (!faulted()) return mtiaSuccess;
    std::lock_guard lock(faultMu_);
    return faultCode_;
}

void Device::reset() {
    for (const std::shared_ptr<Queue>& queue : queues()) queue->waitFor(queue->submitted(), true);
    peers_.store(0, std::memory_order_release);
    std::lock_guard lock(faultMu_);
    faultMessage_.clear();
    faultCode_ = mtiaSuccess;
    faulted_.store(0, std::memory_order_release);
}

void Device::setPeerAccess(int32_t peer, bool enable) {
    const uint64_t bit = uint64_t{1} << peer;
    if (enable) {
        peers_.fetch_or(bit, std::memory_order_acq_rel);
    } else {
        peers_.fetch_and(~bit, std::memory_order_acq_rel);
    }
}

bool Device::canAccess(const void* p, uint64_t bytes) const {
    if (memory_.isMapped(p, bytes)) return true;
    uint64_t peers = peers_.load(std::memory_order_acquire);
    while (peers != 0) {
        const int peer = std::countr_zero(peers);
        peers &= peers - 1;
        if (machine_.device(peer)->memory().isMapped(p, bytes)) return true;
    }
    return false;
}

std::shared_ptr<Queue> Device::createQueue(int32_t priority) {
    priority = std::clamp(priority, kPriorityGreatest, kPriorityLeast);
    scheduler_.start();
    std::lock_guard lock(queuesMu_);
    // Forget queues that were destroyed and have drained; their weak entries would pile up
    // otherwise.
    std::erase_if(queues_, [](const std::weak_ptr<Queue>& q) { return q.expired(); });
    const uint32_t number = queuesCreated_++;
    auto queue = std::make_shared<Queue>(*this, priority, number,
                                         faults_.slowNs(index_, static_cast<int32_t>(number)),
                                         config_.queueDepth);
    queues_.push_back(queue);
    return queue;
}

std::vector<std::shared_ptr<Queue>> Device::queues() {
    std::vector<std::shared_ptr<Queue>> live;
    std::lock_guard lock(queuesMu_);
    live.reserve(queues_.size());
    for (const std::weak_ptr<Queue>& q : queues_) {
        if (std::shared_ptr<Queue> locked = q.lock()) live.push_back(std::move(locked));
    }
    return live;
}

}  // namespace mtia::sim
