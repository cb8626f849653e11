#include "core/api_guard.hpp"
#include "core/sized_struct.hpp"
#include "graph/capture.hpp"
#include "runtime/context/device_reset.hpp"
#include "runtime/context/runtime.hpp"

#include <mtia/mtia.h>

#include <cstring>

using mtia::apiCall;
using mtia::fail;
using mtia::requireNonNull;
using mtia::Runtime;

namespace {

mtiaDeviceProp toProp(const mtiaDrvDeviceInfo& i) {
    mtiaDeviceProp p{};
    p.structSize = sizeof(p);
    std::memcpy(p.name, i.name, sizeof(p.name));
    p.name[sizeof(p.name) - 1] = '\0';
    std::memcpy(p.uuid, i.uuid, sizeof(p.uuid));
    std::memcpy(p.pciBusId, i.pciBusId, sizeof(p.pciBusId));
    p.pciBusId[sizeof(p.pciBusId) - 1] = '\0';
    p.totalGlobalMem = i.totalMemory;
    p.multiProcessorCount = i.engines;
    p.major = i.major;
    p.minor = i.minor;
    p.numaNode = i.numaNode;
    p.maxThreadsPerBlock = i.maxThreadsPerBlock;
    for (int k = 0; k < 3; ++k) {
        p.maxThreadsDim[k] = i.maxThreadsDim[k];
        p.maxGridSize[k] = i.maxGridSize[k];
    }
    p.pciDomainID = i.pciDomain;
    p.pciBusID = i.pciBus;
    p.pciDeviceID = i.pciDevice;
    p.streamPriorityLeast = i.priorityLeast;
    p.streamPriorityGreatest = i.priorityGreatest;
    p.sharedMemPerBlock = i.sharedMemPerBlock;
    p.allocationGranularity = i.allocationGranularity;
    p.maxKernelArgs = i.maxKernelArgs;
    p.maxKernelBuffers = i.maxKernelBuffers;
    p.maxKernelArgBytes = i.maxKernelArgBytes;
    p.l2CacheSize = i.l2CacheSize;
    return p;
}

}  // namespace

extern "C" {

MTIA_API mtiaError_t mtiaGetDeviceCount(int* count) {
    return apiCall("mtiaGetDeviceCount", [&] {
        requireNonNull(count, "count");
        Runtime* rt = Runtime::tryInstance();
        *count = rt ? rt->deviceCount() : 0;
    });
}

MTIA_API mtiaError_t mtiaSetDevice(int dev) {
    return apiCall("mtiaSetDevice", [&] {
        Runtime::instance().device(dev);
        mtia::currentDeviceOrdinal() = dev;
    });
}

MTIA_API mtiaError_t mtiaGetDevice(int* dev) {
    return apiCall("mtiaGetDevice", [&] {
        requireNonNull(dev, "dev");
        *dev = Runtime::instance().currentDevice().ordinal();
    });
}

MTIA_API mtiaError_t mtiaExchangeDevice(int dev, int* prev) {
    return apiCall("mtiaExchangeDevice", [&] {
        requireNonNull(prev, "prev");
        Runtime& rt = Runtime::instance();
        rt.device(dev);
        *prev = mtia::currentDeviceOrdinal();
        mtia::currentDeviceOrdinal() = dev;
    });
}

MTIA_API mtiaError_t mtiaGetDeviceProperties(mtiaDeviceProp* prop, int dev) {
    return apiCall("mtiaGetDeviceProperties", [&] {
        mtia::checkSized(prop, "prop");
        mtia::writeSized(prop, toProp(Runtime::instance().device(dev).info()));
    });
}

MTIA_API mtiaError_t mtiaDeviceSynchronize(void) {
    return apiCall("mtiaDeviceSynchronize", [&] {
        mtia::Device& dev = Runtime::instance().currentDevice();
        if (mtia::graph::CaptureTable::anyActive()) [[unlikely]]
            mtia::graph::CaptureTable::instance().checkDeviceSync(dev.ordinal(),
                                                                  "mtiaDeviceSynchronize");
        dev.synchronize();
    });
}

MTIA_API mtiaError_t mtiaDeviceReset(void) {
    return apiCall("mtiaDeviceReset", [&] {
        Runtime& rt = Runtime::instance();
        mtia::resetDevice(rt, rt.currentDevice());
    });
}

MTIA_API mtiaError_t mtiaDeviceGetStreamPriorityRange(int* least, int* greatest) {
    return apiCall("mtiaDeviceGetStreamPriorityRange", [&] {
        const mtiaDrvDeviceInfo& i = Runtime::instance().currentDevice().info();
        if (least) *least = i.priorityLeast;
        if (greatest) *greatest = i.priorityGreatest;
    });
}

MTIA_API mtiaError_t mtiaMemGetInfo(size_t* free, size_t* total) {
    return apiCall("mtiaMemGetInfo", [&] {
        requireNonNull(free, "free");
        requireNonNull(total, "total");
        Runtime& rt = Runtime::instance();
        mtia::Device& dev = rt.currentDevice();
        rt.ipc().collect();
        uint64_t f = 0, t = 0;
        rt.driver().check(rt.driver().ops().memGetInfo(dev.driverDevice(), &f, &t),
                          "reading device memory");
        *free = static_cast<size_t>(f);
        *total = static_cast<size_t>(t);
    });
}

MTIA_API mtiaError_t mtiaDeviceCanAccessPeer(int* can, int dev, int peer) {
    return apiCall("mtiaDeviceCanAccessPeer", [&] {
        requireNonNull(can, "can");
        Runtime& rt = Runtime::instance();
        const mtia::Device& d = rt.device(dev, "dev");
        rt.device(peer, "peer");
        *can = (dev != peer && d.info().canAccessPeers) ? 1 : 0;
    });
}

MTIA_API mtiaError_t mtiaDeviceEnablePeerAccess(int peer, unsigned int flags) {
    return apiCall("mtiaDeviceEnablePeerAccess", [&] {
        if (flags != 0)
            fail(mtiaErrorInvalidValue, "flags 0x{:x} has unknown bits (expected 0)", flags);
        Runtime& rt = Runtime::instance();
        mtia::Device& d = rt.currentDevice();
        mtia::Device& p = rt.device(peer, "peer");
        if (&d == &p) fail(mtiaErrorInvalidDevice, "peer is {}, the current device itself", peer);
        if (!d.setPeerAccess(p, true))
            fail(mtiaErrorIllegalState,
                 "peer access from device {} to device {} is already enabled", d.ordinal(), peer);
    });
}

MTIA_API mtiaError_t mtiaDeviceDisablePeerAccess(int peer) {
    return apiCall("mtiaDeviceDisablePeerAccess", [&] {
        Runtime& rt = Runtime::instance();
        mtia::Device& d = rt.currentDevice();
        mtia::Device& p = rt.device(peer, "peer");
        if (&d == &p) fail(mtiaErrorInvalidDevice, "peer is {}, the current device itself", peer);
        if (!d.setPeerAccess(p, false))
            fail(mtiaErrorIllegalState, "peer access from device {} to device {} is not enabled",
                 d.ordinal(), peer);
    });
}

}  // extern "C"
