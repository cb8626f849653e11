#include "runtime/context/runtime.hpp"

#include "core/api_guard.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "platform/driver/builtin_drivers.hpp"
#include "platform/driver/loader.hpp"
#include "runtime/context/memory_snapshot.hpp"
#include "runtime/context/remote_snapshot.hpp"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>

namespace mtia {
namespace {

std::once_flag gInitOnce;
Runtime* gRuntime =
    nullptr;  // intentionally never destroyed: driver threads may outlive static destruction
std::atomic<Runtime*> gReady{nullptr};  // gRuntime once initialisation succeeded
std::string gInitFailure;
// Set in a child forked after initialisation began (Note [fork]).
std::atomic<bool> gForkedChild{false};

// Note [fork]: a child forked from a process that initialised the runtime cannot use it, as in
// CUDA. The child has none of the driver's engine threads, so queued work would never run and waits
// would block forever; the parent's device memory, streams and events are the parent's. So the
// child handler below clears gReady, and every later ABI call in the child fails with
// InitializationError instead (the check sits behind the acquire load that every call already
// makes: no system call such as getpid() on the hot path). A child forked before initialisation, or
// one that execs, starts afresh.
void onForkChild() noexcept {
    gReady.store(nullptr, std::memory_order_relaxed);
    gForkedChild.store(true, std::memory_order_relaxed);
}

[[noreturn, gnu::noinline, gnu::cold]] void failInForkedChild() {
    throw Error(mtiaErrorInitializationError,
                "this process is a fork of one that had initialised the runtime; a forked child "
                "cannot use its parent's "
                "devices (initialise the runtime only after fork, or start the child with exec or "
                "multiprocessing's 'spawn' method)");
}

}  // namespace

namespace {

// MTIA_ALLOC_CONF, in PYTORCH_CUDA_ALLOC_CONF syntax; a bad setting fails initialisation naming the
// key.
allocator::AllocConfig readAllocatorSettings() {
    const std::optional<std::string> conf = processEnv()("MTIA_ALLOC_CONF");
    if (!conf) return {};
    try {
        return allocator::AllocConfig::parse(*conf);
    } catch (const Error& e) {
        fail(mtiaErrorInvalidValue, "MTIA_ALLOC_CONF: {}", e.what());
    }
}

}  // namespace

Device* Runtime::deviceOfAddress(const void* ptr) {
    if (ptr == nullptr) return nullptr;
    for (const std::unique_ptr<Device>& dev : devices_)
        if (dev->ownsAddress(ptr)) return dev.get();
    // Drivers that do not report their address ranges: ask the allocators.
    for (const std::unique_ptr<Device>& dev : devices_)
        if (dev->info().vaSize == 0)
            if (allocator::DeviceAllocator* mem = dev->memoryIfStarted();
                mem != nullptr && mem->find(ptr))
                return dev.get();
    return nullptr;
}

Device* Runtime::deviceOfDriver(int32_t driverDevice) {
    for (const std::unique_ptr<Device>& dev : devices_)
        if (dev->driverDevice() == driverDevice) return dev.get();
    return nullptr;
}

int& currentDeviceOrdinal() noexcept {
    thread_local int current = 0;
    return current;
}

Runtime::Runtime() {
    options_ = readRuntimeOptions(processEnv());
    setLogLevel(options_.logLevel);
    allocContext_ = std::make_unique<allocator::AllocatorContext>(readAllocatorSettings());
    hostAllocator_ = std::make_unique<allocator::HostAllocator>(allocContext_->config());
    // Installed drivers live under mtia/ next to libmtia.so.
    driver_ =
        driver::loadDriver(options_.driver, driver::kBuiltinDrivers, driver::thisLibraryDir());
    const int32_t driverCount = driver_->deviceCount();
    std::vector<int> ordinals;
    if (options_.visibleDevices) {
        for (int d : *options_.visibleDevices)
            if (d >= driverCount)
                fail(mtiaErrorInitializationError,
                     "MTIA_VISIBLE_DEVICES lists device {}, but driver '{}' has {} device(s)", d,
                     driver_->name(), driverCount);
        ordinals = *options_.visibleDevices;
    } else {
        for (int d = 0; d < driverCount; ++d) ordinals.push_back(d);
    }
    for (size_t i = 0; i < ordinals.size(); ++i)
        devices_.push_back(
            std::make_unique<Device>(*driver_, static_cast<int>(i), ordinals[i], *allocContext_));
    streams_ = std::make_unique<StreamTable>(devices_.size());
    ipc_ = std::make_unique<IpcMemory>(*driver_);
    kernels_.attach(driver_.get());
    setDeviceThreadProbe(driver_->ops().isDriverThread);
    if (!options_.oomSnapshot.empty()) installOomSnapshot(*this, options_.oomSnapshot);
    installRemoteSnapshot(*this);
}

Runtime& Runtime::instance() {
    // Every ABI call comes through here: after initialisation it is one acquire load.
    if (Runtime* rt = gReady.load(std::memory_order_acquire)) [[likely]]
        return *rt;
    if (gForkedChild.load(std::memory_order_relaxed)) failInForkedChild();
    std::call_once(gInitOnce, [] {
        // Before anything is started: a fork from here on leaves a child that must not use the
        // runtime.
        pthread_atfork(nullptr, nullptr, onForkChild);
        try {
            gRuntime = new Runtime();
            // Work still queued at exit runs to completion before static destruction tears down
            // what host functions and kernels may use (CUDA drains its contexts at exit as well).
            // The pinned allocator's polling thread stops then too: it must not ask the driver
            // about queues while static destruction runs.
            std::atexit([] {
                stopRemoteSnapshot();
                gRuntime->drain();
                gRuntime->hostAllocator().stopBackgroundThread();
            });
            gReady.store(gRuntime, std::memory_order_release);
        } catch (const std::exception& e) {
            gInitFailure = e.what();
            log(LogLevel::Error, "initialisation failed: {}", gInitFailure);
        }
    });
    if (gRuntime == nullptr)
        throw Error(mtiaErrorInitializationError,
                    "the runtime failed to initialise: " + gInitFailure);
    return *gRuntime;
}

bool Runtime::forkedChild() noexcept {
    return gForkedChild.load(std::memory_order_relaxed);
}

Runtime* Runtime::tryInstance() noexcept {
    try {
        return &instance();
    } catch (...) {
        return nullptr;
    }
}

Device& Runtime::device(int ordinal, const char* argName) {
    if (ordinal >= 0 && ordinal < deviceCount()) [[likely]]
        return *devices_[static_cast<size_t>(ordinal)];
    badDevice(ordinal, argName);
}

// Out of line, so the common path of device() (every ABI call) stays a bounds check.
void Runtime::badDevice(int ordinal, const char* argName) const {
    if (devices_.empty())
        fail(mtiaErrorNoDevice, "no device is available (driver '{}')", driver_->name());
    fail(mtiaErrorInvalidDevice, "{} is {}; valid devices are 0 to {}", argName, ordinal,
         deviceCount() - 1);
}

Device& Runtime::currentDevice() {
    return device(currentDeviceOrdinal(), "the current device");
}

std::shared_ptr<streams::Stream> Runtime::stream(mtiaStream_t handle, const char* argName) {
    if (handle != nullptr) return streams_->get(handle, argName);
    return streams_->current(currentDevice(), argName);
}

StreamTable::StreamRef Runtime::borrowStream(mtiaStream_t handle, const char* argName) {
    if (handle != nullptr) return streams_->borrow(handle, argName);
    return streams_->borrowCurrent(currentDevice(), argName);
}

void Runtime::drain() noexcept {
    if (driver_->ops().isDriverThread() != 0)
        return;                 // exit() from a host function: it would wait on itself
    if (forkedChild()) return;  // a forked child has no engines to finish the parent's work
    for (const std::unique_ptr<Device>& dev : devices_) {
        // Failures (a sticky fault) only mean there is nothing left to wait for.
        (void)driver_->ops().deviceSynchronize(dev->driverDevice());
    }
}

graph::DeviceContext Runtime::graphContext(Device& dev) {
    graph::DeviceContext ctx;
    ctx.target.driver = driver_.get();
    ctx.target.device = dev.ordinal();
    ctx.target.driverDevice = dev.driverDevice();
    ctx.target.engines = dev.info().engines;
    ctx.memory = &dev.memory();
    return ctx;
}

}  // namespace mtia
