// The process-wide runtime: the loaded driver, the visible devices, the
// handle tables and the per-thread state. Initialised once, lazily, by the
// first ABI call that needs it; a failed initialisation is remembered and
// reported by every later call.
#pragma once

#include "allocator/allocator_context.hpp"
#include "allocator/host_allocator.hpp"
#include "core/handle_table.hpp"
#include "core/options.hpp"
#include "graph/graph_object.hpp"
#include "platform/driver/driver.hpp"
#include "runtime/context/device.hpp"
#include "runtime/context/ipc_memory.hpp"
#include "runtime/context/kernels.hpp"
#include "runtime/context/stream_table.hpp"
#include "streams/stream.hpp"

#include <mtia/mtia_types.h>

#include <memory>
#include <vector>

namespace mtia {

class Runtime {
public:
    // The runtime, initialising it on first use. Thread-safe.
    // Throws Error(InitializationError) when initialisation failed, and in a child forked after the
    // runtime was initialised (Note [fork] in runtime.cpp).
    static Runtime& instance();
    // True in a child forked after the runtime was initialised. Never throws.
    static bool forkedChild() noexcept;
    // The runtime, or null when initialisation failed. Never throws.
    static Runtime* tryInstance() noexcept;

    const driver::Driver& driver() const noexcept { return *driver_; }
    const RuntimeOptions& options() const noexcept { return options_; }
    int deviceCount() const noexcept { return static_cast<int>(devices_.size()); }
    // Throws NoDevice (no devices) or InvalidDevice naming argName.
    Device& device(int ordinal, const char* argName = "dev");
    Device& currentDevice();

    // Streams: NULL is the current thread's current stream on the current device.
    std::shared_ptr<streams::Stream> stream(mtiaStream_t handle, const char* argName = "stream");
    // stream() for the hot paths: no reference count update; one per thread at a time
    // (HandleTable::Ref).
    StreamTable::StreamRef borrowStream(mtiaStream_t handle, const char* argName = "stream");
    std::shared_ptr<streams::Stream> defaultStream(Device& dev) {
        return streams_->defaultStream(dev);
    }
    StreamTable& streams() noexcept { return *streams_; }
    // Waits for the work of every started device (process exit); skipped on driver threads.
    void drain() noexcept;

    Kernels& kernels() noexcept { return kernels_; }
    // Graph objects (mtiaGraph_t).
    HandleTable<graph::GraphObject>& graphs() noexcept { return graphs_; }
    // What a graph capturing on dev needs of it (driver, engines, allocator). Starts dev's
    // allocator.
    graph::DeviceContext graphContext(Device& dev);
    // What the device allocators share: settings (MTIA_ALLOC_CONF, mtiaAllocatorSetConfig),
    // observers.
    allocator::AllocatorContext& allocatorContext() noexcept { return *allocContext_; }
    // The process's caching pinned-host allocator (mtiaMallocHost); placement asks the caller for
    // the device's NUMA node. Thread-safe.
    allocator::HostAllocator& hostAllocator() noexcept { return *hostAllocator_; }
    // The device whose memory ptr is, if any (address ranges first, then the allocators).
    // Thread-safe.
    Device* deviceOfAddress(const void* ptr);
    // The device whose driver number is driverDevice, or null.
    Device* deviceOfDriver(int32_t driverDevice);
    // IPC memory handles of this process (exports, deferred frees, imports).
    IpcMemory& ipc() noexcept { return *ipc_; }

private:
    Runtime();
    [[noreturn, gnu::noinline, gnu::cold]] void badDevice(int ordinal, const char* argName) const;

    RuntimeOptions options_;
    std::unique_ptr<driver::Driver> driver_;
    std::unique_ptr<allocator::AllocatorContext> allocContext_;
    std::unique_ptr<allocator::HostAllocator> hostAllocator_;
    std::vector<std::unique_ptr<Device>> devices_;
    std::unique_ptr<StreamTable> streams_;
    std::unique_ptr<IpcMemory> ipc_;
    Kernels kernels_;
    HandleTable<graph::GraphObject> graphs_{kTagGraph};
};

// The calling thread's current device ordinal (0 until set).
int& currentDeviceOrdinal() noexcept;

}  // namespace mtia
