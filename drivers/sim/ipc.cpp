#include "ipc.hpp"

#include "error.hpp"
#include "platform/registry/fork_guard.hpp"

#include <unistd.h>

#include <cstring>

namespace mtia::sim {

uint32_t machineHash(const std::string& registryName) {
    uint32_t h = 2166136261u;  // FNV-1a
    for (unsigned char c : registryName) h = (h ^ c) * 16777619u;
    return h;
}

void pack(const IpcDescriptor& d, mtiaDrvIpcDescriptor& out) {
    std::memset(&out, 0, sizeof out);
    std::memcpy(out.bytes, &d, sizeof d);
}

mtiaError_t unpack(const char* entry, const mtiaDrvIpcDescriptor* in, IpcKind kind,
                   uint32_t machine, IpcDescriptor& out) {
    std::memcpy(&out, in->bytes, sizeof out);
    if (out.magic != kIpcMagic)
        return reportErrorf(
            mtiaErrorInvalidHandle,
            "{}: the handle is not one of the simulated driver (bad magic 0x{:08x})", entry,
            out.magic);
    if (out.version != kIpcVersion)
        return reportErrorf(mtiaErrorInvalidHandle,
                            "{}: the handle has driver version {}; this driver reads version {}",
                            entry, out.version, kIpcVersion);
    if (out.kind != static_cast<uint16_t>(kind))
        return reportErrorf(mtiaErrorInvalidHandle, "{}: the handle is {}, not {}", entry,
                            out.kind == static_cast<uint16_t>(IpcKind::Event) ? "an event handle"
                            : out.kind == static_cast<uint16_t>(IpcKind::Memory)
                                ? "a memory handle"
                                : "of an unknown kind",
                            kind == IpcKind::Event ? "an event handle" : "a memory handle");
    if (out.uid != geteuid())
        return reportErrorf(mtiaErrorNotPermitted,
                            "{}: the handle was exported by user {}; this process runs as user {}",
                            entry, out.uid, geteuid());
    if (out.machine != machine)
        return reportErrorf(mtiaErrorInvalidHandle,
                            "{}: the handle belongs to another simulated machine (machine id "
                            "{:08x}, this process's is {:08x}: "
                            "its MTIA_SIM_* settings differ)",
                            entry, out.machine, machine);
    return mtiaSuccess;
}

registry::IpcRef refOf(const IpcDescriptor& d) {
    return registry::IpcRef{d.slot, d.index, d.registration, d.generation};
}

std::unique_lock<std::mutex> IpcState::lock() {
    std::unique_lock<std::mutex> held(mu);
    const uint64_t now = registry::fork_guard::generation();
    if (now != forkGeneration_) [[unlikely]] {
        forkGeneration_ = now;
        imports.clear();
        importsByAddress.clear();
        for (auto& [address, event] : events) inherited_.push_back(std::move(event));
        events.clear();
    }
    return held;
}

}  // namespace mtia::sim
