// mtia_ipc.h: device memory and events shared between processes.
#include "core/api_guard.hpp"
#include "graph/capture.hpp"
#include "runtime/context/runtime.hpp"
#include "streams/ipc_event.hpp"

#include <mtia/mtia.h>

#include <cstring>

using mtia::apiCall;
using mtia::fail;
using mtia::requireNonNull;
using mtia::Runtime;
using mtia::graph::CaptureTable;

namespace {

// The checks every IPC call starts with: a driver that shares, and no capture that forbids the
// call.
Runtime& ipcRuntime(const char* call, int device) {
    Runtime& rt = Runtime::instance();
    if (!rt.driver().supportsIpc())
        fail(mtiaErrorNotSupported,
             "driver '{}' implements driver ABI {}.{}, which shares no memory or events between "
             "processes (IPC needs driver ABI 1.4)",
             rt.driver().name(), MTIA_DRIVER_API_MAJOR(rt.driver().ops().version),
             MTIA_DRIVER_API_MINOR(rt.driver().ops().version));
    if (CaptureTable::anyActive()) [[unlikely]]
        CaptureTable::instance().checkUnsafe(device, call);
    rt.ipc().collect();
    return rt;
}

}  // namespace

extern "C" {

MTIA_API mtiaError_t mtiaIpcGetMemHandle(mtiaIpcMemHandle_t* handle, void* devPtr) {
    return apiCall("mtiaIpcGetMemHandle", [&] {
        requireNonNull(handle, "handle");
        if (devPtr == nullptr) fail(mtiaErrorInvalidValue, "devPtr is NULL");
        Runtime& rt = Runtime::instance();
        mtia::Device* dev = rt.deviceOfAddress(devPtr);
        mtia::allocator::DeviceAllocator* mem = dev != nullptr ? dev->memoryIfStarted() : nullptr;
        ipcRuntime("mtiaIpcGetMemHandle",
                   dev != nullptr ? dev->ordinal() : rt.currentDevice().ordinal());
        if (mem == nullptr || (!mem->find(devPtr) && rt.ipc().findImport(devPtr)))
            fail(mtiaErrorInvalidValue,
                 "devPtr {} is not device memory from mtiaMalloc/mtiaMallocAsync ({})", devPtr,
                 mem != nullptr ? "memory imported from another process cannot be exported again"
                                : "a host pointer, or never allocated");
        *handle = rt.ipc().exportAllocation(*mem, devPtr);
    });
}

MTIA_API mtiaError_t mtiaIpcOpenMemHandle(void** devPtr, mtiaIpcMemHandle_t handle,
                                          unsigned int flags) {
    return apiCall("mtiaIpcOpenMemHandle", [&] {
        requireNonNull(devPtr, "devPtr");
        if ((flags & ~mtiaIpcMemLazyEnablePeerAccess) != 0)
            fail(mtiaErrorInvalidValue,
                 "flags 0x{:x} has unknown bits (0 or mtiaIpcMemLazyEnablePeerAccess)", flags);
        Runtime& rt =
            ipcRuntime("mtiaIpcOpenMemHandle", Runtime::instance().currentDevice().ordinal());
        int32_t driverDevice = 0;
        void* ptr = rt.ipc().open(handle, driverDevice);
        if (rt.deviceOfDriver(driverDevice) == nullptr) {
            rt.ipc().close(ptr);
            fail(mtiaErrorInvalidDevice,
                 "handle names device {} of the driver, which MTIA_VISIBLE_DEVICES hides here",
                 driverDevice);
        }
        *devPtr = ptr;
    });
}

MTIA_API mtiaError_t mtiaIpcCloseMemHandle(void* devPtr) {
    return apiCall("mtiaIpcCloseMemHandle", [&] {
        Runtime& rt =
            ipcRuntime("mtiaIpcCloseMemHandle", Runtime::instance().currentDevice().ordinal());
        rt.ipc().close(devPtr);
    });
}

MTIA_API mtiaError_t mtiaIpcGetEventHandle(mtiaIpcEventHandle_t* handle, mtiaEvent_t event) {
    return apiCall("mtiaIpcGetEventHandle", [&] {
        requireNonNull(handle, "handle");
        Runtime& rt = Runtime::instance();
        std::shared_ptr<mtia::streams::Event> e = rt.streams().event(event);
        ipcRuntime("mtiaIpcGetEventHandle", e->device());
        if ((e->flags() & mtiaEventInterprocess) == 0)
            fail(mtiaErrorInvalidValue,
                 "event was not created with mtiaEventInterprocess (and mtiaEventDisableTiming)");
        mtia::streams::IpcEventShare* share = e->ipc();
        if (share != nullptr && !share->exporter())
            fail(mtiaErrorInvalidValue,
                 "event was opened from an IPC handle; only its exporter hands out its handle");
        if (share == nullptr) {
            mtia::IpcWireHandle w{};
            w.magic = mtia::kIpcHandleMagic;
            w.version = mtia::kIpcHandleVersion;
            w.kind = static_cast<uint16_t>(mtia::IpcHandleKind::Event);
            mtiaDrvIpcEvent drv = nullptr;
            const mtia::Device& dev = rt.device(e->device());
            rt.driver().check(rt.driver().ops().ipcEventExport(dev.driverDevice(), &w.driver, &drv),
                              "event");
            e->setIpc(
                std::make_shared<mtia::streams::IpcEventShare>(rt.driver(), drv, true, w.driver));
            share = e->ipc();
        }
        mtia::IpcWireHandle w{};
        w.magic = mtia::kIpcHandleMagic;
        w.version = mtia::kIpcHandleVersion;
        w.kind = static_cast<uint16_t>(mtia::IpcHandleKind::Event);
        w.driver = share->descriptor();
        std::memcpy(handle->reserved, &w, sizeof w);
    });
}

MTIA_API mtiaError_t mtiaIpcOpenEventHandle(mtiaEvent_t* event, mtiaIpcEventHandle_t handle) {
    return apiCall("mtiaIpcOpenEventHandle", [&] {
        requireNonNull(event, "event");
        Runtime& rt =
            ipcRuntime("mtiaIpcOpenEventHandle", Runtime::instance().currentDevice().ordinal());
        const mtia::IpcWireHandle w =
            mtia::readIpcHandle(handle.reserved, mtia::IpcHandleKind::Event, "handle");
        mtiaDrvIpcEvent drv = nullptr;
        int32_t driverDevice = 0;
        const mtiaError_t s = rt.driver().ops().ipcEventOpen(&w.driver, &drv, &driverDevice);
        if (s == mtiaErrorInvalidValue)
            rt.driver().raise(
                s, "handle",
                fmt::format(
                    "{} (an exporter cannot open its own handle; pass it to another process)",
                    rt.driver().message()));
        rt.driver().check(s, "handle");
        auto share =
            std::make_shared<mtia::streams::IpcEventShare>(rt.driver(), drv, false, w.driver);
        mtia::Device* dev = rt.deviceOfDriver(driverDevice);
        if (dev == nullptr)
            fail(mtiaErrorInvalidDevice,
                 "handle names device {} of the driver, which MTIA_VISIBLE_DEVICES hides here",
                 driverDevice);
        mtiaEvent_t created = rt.streams().createEvent(
            rt.driver(), *dev, mtiaEventDisableTiming | mtiaEventInterprocess);
        rt.streams().event(created)->setIpc(std::move(share));
        *event = created;
    });
}

}  // extern "C"
