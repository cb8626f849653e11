#include "management.hpp"

#include "core/env.hpp"
#include "core/error.hpp"
#include "platform/driver/builtin_drivers.hpp"
#include "platform/driver/loader.hpp"
#include "platform/registry/busy_window.hpp"
#include "platform/registry/cleanup.hpp"
#include "platform/registry/requests.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <thread>

namespace mtia::ml {
namespace {

Management* gInstance = nullptr;
int gReferences = 0;

[[noreturn]] void failRegistry(const registry::Status& status) {
    if (status.code == registry::Code::Permission)
        fail(mtiaErrorNotPermitted, "device registry: {}", status.message);
    fail(mtiaErrorInitializationError, "device registry unavailable: {}", status.message);
}

}  // namespace

std::mutex& Management::mutex() {
    static std::mutex mu;
    return mu;
}

Management& Management::require() {
    if (gInstance == nullptr)
        fail(mtiaErrorInitializationError,
             "the management library is not initialised (call mtiamlInit)");
    return *gInstance;
}

void Management::init() {
    std::lock_guard lock(mutex());
    if (gInstance != nullptr) {
        ++gReferences;
        return;
    }
    std::unique_ptr<Management> state(new Management());
    state->load();
    gInstance = state.release();
    gReferences = 1;
}

void Management::shutdown() {
    std::lock_guard lock(mutex());
    require();
    if (--gReferences == 0) {
        delete gInstance;
        gInstance = nullptr;
    }
}

void Management::load() {
    // The runtime's choice of driver (MTIA_DRIVER), opened without init: the driver starts nothing.
    driver_ = driver::openDriver(processEnv()("MTIA_DRIVER").value_or(""), driver::kBuiltinDrivers,
                                 driver::thisLibraryDir());
    // Without the 1.6 entries the machine stays unknown: the machine list and cleanup by index
    // still work.
    if (!driver_->describesMachines()) return;
    spec_ = driver_->machineSpec();
    registry::MachineSpec machine;
    machine.name.assign(spec_.machine, strnlen(spec_.machine, sizeof spec_.machine));
    machine.devices = static_cast<uint32_t>(spec_.devices);
    machine.memoryBytes = spec_.memoryBytes;
    machine.engines = static_cast<uint32_t>(spec_.engines);
    objectName_ = machine.objectName(getuid());
    devices_ = describe(spec_);
    registry();  // a registry we may not read is an error now, not at the first query
}

std::vector<mtiaDrvDeviceInfo> Management::describe(const mtiaDrvMachineSpec& spec) const {
    std::vector<mtiaDrvDeviceInfo> devices;
    if (!driver_->describesMachines())
        driver_->describeDevice(spec, 0);  // NotSupported, naming the entry
    for (int32_t dev = 0; dev < spec.devices; ++dev)
        devices.push_back(driver_->describeDevice(spec, dev));
    return devices;
}

void Management::requireMachine() const {
    // A driver with the entries described the machine in load() (or load() threw).
    if (!driver_->describesMachines())
        driver_->machineSpec();  // throws NotSupported naming the entry the driver lacks
}

int32_t Management::deviceCount() const {
    requireMachine();
    return static_cast<int32_t>(devices_.size());
}

uint32_t Management::refreshMachines() {
    machines_ = registry::listMachines(getuid());
    return static_cast<uint32_t>(machines_.size());
}

std::string Management::machineDescription(uint32_t index) {
    if (index >= machines_.size())
        fail(mtiaErrorNotFound,
             "machine {} does not exist: {} machine(s) listed (mtiamlMachineGetCount)", index,
             machines_.size());
    std::unique_ptr<registry::Registry> reg;
    const registry::Status status = registry::Registry::openReadOnly(machines_[index], reg);
    if (status.code == registry::Code::NotFound)
        fail(mtiaErrorNotFound, "machine {} is gone: its registry {} was removed", index,
             machines_[index]);
    if (!status) failRegistry(status);
    return reg->machine();
}

void Management::selectMachine(uint32_t index) {
    const std::string description = machineDescription(index);
    // MachineSpec::description(): "devices=N memory=BYTES engines=N machine=NAME" (NAME may hold
    // spaces).
    mtiaDrvMachineSpec spec{};
    spec.structSize = sizeof(spec);
    unsigned devices = 0, engines = 0;
    unsigned long long memory = 0;
    int consumed = 0;
    if (std::sscanf(description.c_str(), "devices=%u memory=%llu engines=%u machine=%n", &devices,
                    &memory, &engines, &consumed) != 3 ||
        consumed == 0 || devices > MTIAML_MAX_DEVICES)
        fail(mtiaErrorInitializationError, "registry {} records an unreadable machine: '{}'",
             machines_[index], description);
    spec.devices = static_cast<int32_t>(devices);
    spec.engines = static_cast<int32_t>(engines);
    spec.memoryBytes = memory;
    std::snprintf(spec.machine, sizeof spec.machine, "%s", description.c_str() + consumed);
    std::unique_ptr<registry::Registry> reg;
    const registry::Status status = registry::Registry::openReadOnly(machines_[index], reg);
    if (!status) failRegistry(status);
    std::vector<mtiaDrvDeviceInfo> described;
    try {
        described = describe(spec);
    } catch (const Error& e) {
        if (e.code() != mtiaErrorInvalidValue) throw;
        fail(mtiaErrorInitializationError,
             "registry {} records a machine the driver cannot describe: {}", machines_[index],
             e.what());
    }
    spec_ = spec;
    objectName_ = machines_[index];
    registry_ = std::move(reg);
    devices_ = std::move(described);
}

const mtiaDrvDeviceInfo& Management::device(int32_t dev) const {
    requireMachine();
    if (dev < 0 || dev >= deviceCount())
        fail(mtiaErrorInvalidDevice, "device {} does not exist: the machine has {} device(s)", dev,
             deviceCount());
    return devices_[static_cast<size_t>(dev)];
}

registry::Registry* Management::registry() {
    if (registry_) return registry_.get();
    if (objectName_.empty()) return nullptr;  // the driver cannot name its machine
    const registry::Status status = registry::Registry::openReadOnly(objectName_, registry_);
    if (status.code == registry::Code::NotFound) return nullptr;
    if (!status) failRegistry(status);
    return registry_.get();
}

std::vector<registry::ProcessRecord> Management::processesOf(int32_t dev) {
    device(dev);
    std::vector<registry::ProcessRecord> out;
    registry::Registry* reg = registry();
    if (reg == nullptr) return out;
    for (registry::ProcessRecord& record : reg->processes()) {
        if (static_cast<size_t>(dev) >= record.devices.size()) continue;
        const registry::DeviceFigures& figures = record.devices[static_cast<size_t>(dev)];
        if (figures.reserved == 0 && figures.allocated == 0) continue;
        out.push_back(std::move(record));
    }
    return out;
}

const topology::HostTopology& Management::host() {
    if (!host_) {
        std::string error;
        host_ = topology::HostTopology::load(error);
        if (!host_) fail(mtiaErrorNotSupported, "host topology: {}", error);
    }
    return *host_;
}

topology::DeviceLocation Management::location(int32_t dev) const {
    const mtiaDrvDeviceInfo& info = device(dev);
    return topology::DeviceLocation{info.pciBusId, info.numaNode};
}

Management::Utilization Management::utilization(int32_t dev) {
    device(dev);
    Utilization out;
    registry::Registry* reg = registry();
    if (reg == nullptr) return out;
    const uint64_t now = registry::monotonicClockNs();
    double share = 0;
    for (const registry::ProcessRecord& r : reg->processes()) {
        const registry::DeviceFigures& f = r.devices[static_cast<size_t>(dev)];
        const double mine =
            registry::recentBusyShare(f.busyNs, f.busyMarks[0], f.busyMarks[1], now);
        // Any busy time in the window shows as at least 1 %, so a working device never reads 0.
        if (mine > 0) share += std::max(mine, 0.01);
        out.busyNs += f.busyNs;
    }
    out.percent = static_cast<uint32_t>(std::min(100.0, share * 100.0 + 0.5));
    return out;
}

Management::CleanupResult Management::cleanup(uint32_t index) {
    CleanupResult out;
    if (index == UINT32_MAX) {
        requireMachine();
        out.objectName = objectName_;
    } else {
        if (index >= machines_.size())
            fail(mtiaErrorNotFound,
                 "machine {} does not exist: {} machine(s) listed (mtiamlMachineGetCount)", index,
                 machines_.size());
        out.objectName = machines_[index];
    }
    // Our own read-only view must not outlive the object; registry() reopens it on the next call.
    if (out.objectName == objectName_) registry_.reset();
    registry::CleanupReport report;
    const registry::Status status = registry::cleanupMachine(out.objectName, report);
    if (status.code == registry::Code::NotFound)
        fail(mtiaErrorNotFound,
             "machine registry {} does not exist (no process has used that machine)",
             out.objectName);
    if (!status) failRegistry(status);
    out.reaped = report.reaped;
    out.live = report.live;
    out.removed = report.removed;
    return out;
}

void Management::requestSnapshot(uint32_t localPid, bool json, uint32_t timeoutMs,
                                 const std::function<void(const std::string&)>& take) {
    if (localPid == 0) fail(mtiaErrorInvalidValue, "pid 0 is no process");
    // The machine read now first, then every other machine of this user.
    std::vector<std::string> names;
    if (!objectName_.empty()) names.push_back(objectName_);
    for (const std::string& name : registry::listMachines(getuid()))
        if (name != objectName_) names.push_back(name);
    std::unique_ptr<registry::Registry> target;
    uint32_t slot = 0;
    for (const std::string& name : names) {
        std::unique_ptr<registry::Registry> reg;
        const registry::Status status = registry::Registry::openExisting(name, reg);
        if (status.code == registry::Code::NotFound || status.code == registry::Code::Unavailable)
            continue;
        if (!status) failRegistry(status);
        for (const registry::ProcessRecord& r : reg->processes()) {
            if (r.localPid == localPid) {
                slot = r.slot;
                target = std::move(reg);
                break;
            }
        }
        if (target) break;
    }
    if (!target) {
        struct stat st;
        const std::string proc = "/proc/" + std::to_string(localPid);
        if (::stat(proc.c_str(), &st) == 0 && st.st_uid != getuid())
            fail(mtiaErrorNotPermitted, "process {} belongs to uid {}, not to uid {}", localPid,
                 st.st_uid, getuid());
        fail(mtiaErrorNotFound,
             "process {} uses no simulated device of this user (it holds no device memory, or has "
             "exited)",
             localPid);
    }
    std::random_device entropy;
    uint32_t token = 0;
    while (token == 0 || token == UINT32_MAX) token = entropy();
    const registry::RequestOp op =
        json ? registry::RequestOp::SnapshotJson : registry::RequestOp::SnapshotPickle;
    const uint64_t request = registry::makeRequest(op, token);
    // Held until the file is taken: while it is, neither the process's exit nor a cleanup removes
    // what it writes for us. Whatever happens below, what it left for this request (finished or
    // .tmp) goes after.
    std::string requests;
    if (const registry::Status s = registry::requestDirectory(target->directory(), true, requests);
        !s)
        failRegistry(s);
    if (const registry::Status s = target->holdRequest(token); !s) failRegistry(s);
    const std::string answer = registry::requestFile(requests, target->name(), slot, token, op);
    struct Leave {
        registry::Registry& target;
        uint32_t token;
        std::string answer;
        ~Leave() {
            ::unlink(answer.c_str());
            ::unlink((answer + ".tmp").c_str());
            target.releaseRequest(token);
        }
    } leave{*target, token, answer};
    // The tool polls (the target sleeps in the kernel until woken, so only the tool spends
    // anything).
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
    // One request at a time per process: another tool's goes first.
    for (;;) {
        const registry::Status posted = target->postRequest(slot, request);
        if (posted) break;
        if (posted.code == registry::Code::NotFound)
            fail(mtiaErrorNotFound, "process {} has exited", localPid);
        if (posted.code != registry::Code::Busy) failRegistry(posted);
        if (std::chrono::steady_clock::now() >= deadline)
            fail(mtiaErrorNotReady,
                 "process {} did not answer within {} ms (busy with another request)", localPid,
                 timeoutMs);
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    bool late = false;
    for (;;) {
        const uint64_t ack = target->acknowledged(slot);
        if (registry::requestToken(ack) == token) {
            target->takeAcknowledgement(slot, ack);
            const auto result = static_cast<registry::RequestResult>(ack >> 32);
            if (result == registry::RequestResult::NotSupported)
                fail(mtiaErrorNotSupported,
                     "process {} cannot write memory snapshots (its runtime installs no handler)",
                     localPid);
            if (result != registry::RequestResult::Done)
                fail(mtiaErrorUnknown, "process {} could not write its memory snapshot", localPid);
            take(answer);
            return;
        }
        if (!target->slotAlive(slot))
            fail(mtiaErrorNotFound, "process {} exited before answering", localPid);
        if (const auto now = std::chrono::steady_clock::now(); now >= deadline) {
            // Take the request back, so the process drops the file it may still be writing for it.
            // Too late for that means it has just answered (its acknowledgement follows within 1 s,
            // once the tool before us took its own) or is stopping: look a little longer; after
            // that, remove what it may have left for us.
            if (!late && !target->withdrawRequest(slot, request)) {
                late = true;
                deadline = now + std::chrono::seconds(2);
                continue;
            }
            fail(mtiaErrorNotReady, "process {} did not answer within {} ms", localPid, timeoutMs);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
}

}  // namespace mtia::ml
