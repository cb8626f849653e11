#include "runtime/context/memory_ops.hpp"

#include "core/error.hpp"
#include "core/sized_struct.hpp"
#include "graph/capture.hpp"

#include <cstring>

namespace mtia {
namespace {

const char* kindName(mtiaMemcpyKind k) {
    switch (k) {
    case mtiaMemcpyHostToHost: return "mtiaMemcpyHostToHost";
    case mtiaMemcpyHostToDevice: return "mtiaMemcpyHostToDevice";
    case mtiaMemcpyDeviceToHost: return "mtiaMemcpyDeviceToHost";
    case mtiaMemcpyDeviceToDevice: return "mtiaMemcpyDeviceToDevice";
    case mtiaMemcpyDefault: return "mtiaMemcpyDefault";
    }
    return "?";
}

// The device range [ptr, ptr + count) must lie inside its allocation.
void checkRange(const char* arg, const void* ptr, size_t count, const DevicePointer& d) {
    const auto p = reinterpret_cast<uintptr_t>(ptr);
    const auto base = reinterpret_cast<uintptr_t>(d.allocation.base);
    if (count > d.allocation.size - (p - base))
        fail(mtiaErrorInvalidValue,
             "{} range of {} bytes at {} runs past the end of its allocation ({} bytes at {} on "
             "device {})",
             arg, count, ptr, d.allocation.size, d.allocation.base, d.device->ordinal());
}

void requireDevice(const char* arg, const void* ptr, const std::optional<DevicePointer>& d,
                   mtiaMemcpyKind kind) {
    if (!d)
        fail(mtiaErrorInvalidValue, "{} {} is not device memory, but kind is {}", arg, ptr,
             kindName(kind));
}

void requireHost(const char* arg, const void* ptr, const std::optional<DevicePointer>& d,
                 mtiaMemcpyKind kind) {
    if (d)
        fail(mtiaErrorInvalidValue,
             "{} {} is device memory of device {}, but kind is {} (mtiaMemcpyDefault infers the "
             "kind)",
             arg, ptr, d->device->ordinal(), kindName(kind));
}

// A pointer inside a device's address range that lies in no allocation (never allocated, freed, or
// a reservation's unmapped part) is refused here: passed on, only the device would notice, with a
// sticky fault. d: findDevicePointer(ptr).
void requireNotStray(Runtime& rt, const char* arg, const void* ptr,
                     const std::optional<DevicePointer>& d) {
    if (d) return;
    if (const Device* dev = rt.deviceOfAddress(ptr))
        fail(mtiaErrorInvalidValue,
             "{} {} lies in the address range of device {} but not in any live allocation", arg,
             ptr, dev->ordinal());
}

void runAndWait(streams::Stream& s, const mtiaDrvCommand& cmd) {
    s.wait(s.submit(cmd));
}

// A synchronous copy or fill: refused where capture rules forbid it (mtia_graph.h), then run on s.
void runSync(streams::Stream& s, const mtiaDrvCommand& cmd, const char* call) {
    if (graph::CaptureTable::anyActive()) [[unlikely]]
        graph::CaptureTable::instance().checkStreamSync(s, call);
    runAndWait(s, cmd);
}

}  // namespace

std::optional<DevicePointer> findDevicePointer(Runtime& rt, const void* ptr) {
    Device* dev = rt.deviceOfAddress(ptr);
    if (dev == nullptr) return std::nullopt;
    if (allocator::DeviceAllocator* mem = dev->memoryIfStarted())
        if (auto a = mem->find(ptr)) return DevicePointer{dev, *a};
    // Memory another process exported, opened here: an allocation of its own for copies and fills.
    if (auto m = rt.ipc().findImport(ptr))
        return DevicePointer{dev, {m->base, m->size, m->size, dev->ordinal()}};
    return std::nullopt;
}

namespace {

// A validated copy: the command and the device it is ordered on by default.
struct CopyPlan {
    mtiaDrvCommand cmd{};
    Device* device = nullptr;  // null: host to host with no device at all
    bool hostInvolved = false;
    bool dstHost = false, srcHost = false;
};

CopyPlan planCopy(Runtime& rt, void* dst, const void* src, size_t count, mtiaMemcpyKind kind) {
    requireNonNull(dst, "dst");
    requireNonNull(src, "src");
    const auto d = findDevicePointer(rt, dst);
    const auto s = findDevicePointer(rt, src);
    requireNotStray(rt, "dst", dst, d);
    requireNotStray(rt, "src", src, s);
    switch (kind) {
    case mtiaMemcpyHostToDevice:
        requireDevice("dst", dst, d, kind);
        requireHost("src", src, s, kind);
        break;
    case mtiaMemcpyDeviceToHost:
        requireHost("dst", dst, d, kind);
        requireDevice("src", src, s, kind);
        break;
    case mtiaMemcpyDeviceToDevice:
        requireDevice("dst", dst, d, kind);
        requireDevice("src", src, s, kind);
        break;
    case mtiaMemcpyHostToHost:
        requireHost("dst", dst, d, kind);
        requireHost("src", src, s, kind);
        break;
    case mtiaMemcpyDefault: break;
    }
    if (d) checkRange("dst", dst, count, *d);
    if (s) checkRange("src", src, count, *s);
    const auto dp = reinterpret_cast<uintptr_t>(dst), sp = reinterpret_cast<uintptr_t>(src);
    if (dp < sp + count && sp < dp + count)
        fail(mtiaErrorInvalidValue, "dst and src ranges of {} bytes overlap", count);

    CopyPlan plan;
    plan.cmd.type = mtiaDrvCmdCopy;
    plan.cmd.u.copy.dst = dst;
    plan.cmd.u.copy.src = src;
    plan.cmd.u.copy.size = count;
    plan.hostInvolved = !d || !s;
    plan.dstHost = !d;
    plan.srcHost = !s;
    plan.device = d ? d->device : s ? s->device : nullptr;
    if (plan.device == nullptr && rt.deviceCount() > 0) plan.device = &rt.currentDevice();
    return plan;
}

mtiaDrvCommand planFill(Runtime& rt, void* ptr, int value, size_t count, Device*& device) {
    requireNonNull(ptr, "ptr");
    const auto d = findDevicePointer(rt, ptr);
    requireNotStray(rt, "ptr", ptr, d);
    if (!d) fail(mtiaErrorInvalidValue, "ptr {} is not device memory", ptr);
    checkRange("ptr", ptr, count, *d);
    device = d->device;
    mtiaDrvCommand cmd{};
    cmd.type = mtiaDrvCmdFill;
    cmd.u.fill.dst = ptr;
    cmd.u.fill.size = count;
    cmd.u.fill.value = static_cast<unsigned char>(value);
    return cmd;
}

}  // namespace

void copySync(Runtime& rt, void* dst, const void* src, size_t count, mtiaMemcpyKind kind) {
    if (count == 0) return;
    CopyPlan plan = planCopy(rt, dst, src, count, kind);
    if (plan.device == nullptr) {  // host to host with no device to order against
        std::memcpy(dst, src, count);
        return;
    }
    runSync(*rt.defaultStream(*plan.device), plan.cmd, "mtiaMemcpy");
}

namespace {

// Whether [ptr, ptr + count) lies inside one live mtiaMallocHost allocation.
bool pinnedRange(Runtime& rt, const void* ptr, size_t count) {
    const auto b = rt.hostAllocator().find(ptr);
    return b &&
           count <= b->size - (static_cast<const char*>(ptr) - static_cast<const char*>(b->base));
}

// Whether the host sides of a copy are all pinned memory, which the copy may then use after the
// call returns: each is recorded for stream, so the pinned cache does not hand it out again before
// the copy ran, however soon it is freed (what PyTorch's host allocator does for its copies too).
bool holdPinnedSides(Runtime& rt, const CopyPlan& plan, void* dst, const void* src, size_t count,
                     streams::Stream& stream) {
    if ((plan.dstHost && !pinnedRange(rt, dst, count)) ||
        (plan.srcHost && !pinnedRange(rt, src, count)))
        return false;
    try {
        if (plan.dstHost) rt.hostAllocator().recordStream(dst, stream.shared_from_this());
        if (plan.srcHost) rt.hostAllocator().recordStream(src, stream.shared_from_this());
    } catch (const Error&) {
        return false;  // freed by another thread meanwhile: copy it as pageable memory
    }
    return true;
}

}  // namespace

void copyAsync(Runtime& rt, void* dst, const void* src, size_t count, mtiaMemcpyKind kind,
               streams::Stream& stream) {
    if (count == 0) return;
    CopyPlan plan = planCopy(rt, dst, src, count, kind);
    // Host memory that is not pinned may be reused or freed as soon as the call returns (CUDA's
    // rule for pageable memory), so such copies finish before returning; pinned memory only queues,
    // as in CUDA.
    if (plan.hostInvolved && !holdPinnedSides(rt, plan, dst, src, count, stream))
        runAndWait(stream, plan.cmd);
    else
        stream.submit(plan.cmd);
}

void fillSync(Runtime& rt, void* ptr, int value, size_t count) {
    if (count == 0) return;
    Device* device = nullptr;
    const mtiaDrvCommand cmd = planFill(rt, ptr, value, count, device);
    runSync(*rt.defaultStream(*device), cmd, "mtiaMemset");
}

void fillAsync(Runtime& rt, void* ptr, int value, size_t count, streams::Stream& stream) {
    if (count == 0) return;
    Device* device = nullptr;
    const mtiaDrvCommand cmd = planFill(rt, ptr, value, count, device);
    // The fill runs on the stream's device, which may write another device's memory only with peer
    // access (the rule the device applies to fills and kernels, and CUDA's rule for a device's work
    // on a peer's memory). Checked here rather than left to the device, where it would be a sticky
    // fault.
    if (device->ordinal() != stream.device()) {
        const Device& runner = rt.device(stream.device(), "stream");
        if (!runner.peerAccessEnabled(*device))
            fail(mtiaErrorInvalidValue,
                 "ptr {} is memory of device {}, but stream belongs to device {}, which has no "
                 "peer access to it "
                 "(mtiaDeviceEnablePeerAccess)",
                 ptr, device->ordinal(), stream.device());
    }
    stream.submit(cmd);
}

void copyPeerAsync(Runtime& rt, void* dst, int dstDev, const void* src, int srcDev, size_t count,
                   streams::Stream& stream) {
    Device& dd = rt.device(dstDev, "dstDev");
    Device& sd = rt.device(srcDev, "srcDev");
    if (count == 0) return;
    requireNonNull(dst, "dst");
    requireNonNull(src, "src");
    const auto d = findDevicePointer(rt, dst);
    const auto s = findDevicePointer(rt, src);
    if (!d || d->device != &dd)
        fail(mtiaErrorInvalidValue, "dst {} is not device memory of device {} (dstDev)", dst,
             dstDev);
    if (!s || s->device != &sd)
        fail(mtiaErrorInvalidValue, "src {} is not device memory of device {} (srcDev)", src,
             srcDev);
    copyAsync(rt, dst, src, count, mtiaMemcpyDeviceToDevice, stream);
}

void pointerAttributes(Runtime& rt, const void* ptr, mtiaPointerAttributes* out) {
    mtiaPointerAttributes a{};
    a.structSize = sizeof(a);
    a.type = mtiaMemoryTypeUnregistered;
    a.device = -1;
    if (auto d = findDevicePointer(rt, ptr)) {
        a.type = mtiaMemoryTypeDevice;
        a.device = d->device->ordinal();
        a.base = d->allocation.base;
        a.size = d->allocation.size;
    } else if (auto h = rt.hostAllocator().find(ptr)) {
        a.type = mtiaMemoryTypeHost;
        a.base = h->base;
        a.size = h->size;
        a.locked = h->locked ? 1 : 0;
    }
    writeSized(out, a);
}

}  // namespace mtia
