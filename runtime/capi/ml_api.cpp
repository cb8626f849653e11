// <mtia/mtia_ml.h>: the management library. Unlike the rest of the C ABI it
// never initialises the runtime (see runtime/ml/management.hpp).
#include "core/api_guard.hpp"
#include "core/sized_struct.hpp"
#include "runtime/ml/management.hpp"

#include <mtia/mtia_ml.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

using mtia::apiCall;
using mtia::fail;
using mtia::ml::Management;

namespace {

mtiamlLinkType toLink(mtia::topology::Link link) {
    return static_cast<mtiamlLinkType>(static_cast<int32_t>(link));
}

template <size_t N>
void copyText(char (&dst)[N], const std::string& text) {
    std::snprintf(dst, N, "%s", text.c_str());
}

bool endsWith(const std::string& text, const char* suffix) {
    const size_t n = std::strlen(suffix);
    return text.size() >= n && text.compare(text.size() - n, n, suffix) == 0;
}

// Moves from (a private file) to path: rename when on one file system, else copy then unlink. The
// destination gets mode 0600 less nothing (like the private file); from is removed either way.
void moveFile(const std::string& from, const std::string& to) {
    struct Remove {
        const std::string& path;
        ~Remove() { ::unlink(path.c_str()); }
    } removeAtEnd{from};
    if (::rename(from.c_str(), to.c_str()) == 0) return;
    if (errno != EXDEV)
        fail(mtiaErrorInvalidValue, "path '{}' cannot be written: {}", to, std::strerror(errno));
    const int in = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
    if (in < 0)
        fail(mtiaErrorUnknown, "cannot read the snapshot {}: {}", from, std::strerror(errno));
    const int out = ::open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (out < 0) {
        const int err = errno;
        ::close(in);
        fail(mtiaErrorInvalidValue, "path '{}' cannot be written: {}", to, std::strerror(err));
    }
    char buffer[1 << 16];
    bool ok = true;
    for (;;) {
        const ssize_t got = ::read(in, buffer, sizeof buffer);
        if (got == 0) break;
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            ok = false;
            break;
        }
        for (ssize_t done = 0; done < got;) {
            const ssize_t put = ::write(out, buffer + done, static_cast<size_t>(got - done));
            if (put < 0 && errno == EINTR) continue;
            if (put <= 0) {
                ok = false;
                break;
            }
            done += put;
        }
        if (!ok) break;
    }
    const int err = errno;
    ::close(in);
    if (::close(out) != 0 && ok) ok = false;
    if (!ok) fail(mtiaErrorInvalidValue, "path '{}' cannot be written: {}", to, std::strerror(err));
}

}  // namespace

extern "C" {

MTIA_API mtiaError_t mtiamlInit(void) {
    return apiCall("mtiamlInit", [] { Management::init(); });
}

MTIA_API mtiaError_t mtiamlShutdown(void) {
    return apiCall("mtiamlShutdown", [] { Management::shutdown(); });
}

MTIA_API mtiaError_t mtiamlDeviceGetCount(int32_t* count) {
    return apiCall("mtiamlDeviceGetCount", [&] {
        mtia::requireNonNull(count, "count");
        *count = Management::with([](Management& m) { return m.deviceCount(); });
    });
}

MTIA_API mtiaError_t mtiamlDeviceGetInfo(int32_t dev, mtiamlDeviceInfo* info) {
    return apiCall("mtiamlDeviceGetInfo", [&] {
        mtia::checkSized(info, "info");
        mtiamlDeviceInfo out{};
        Management::with([&](Management& m) {
            const mtiaDrvDeviceInfo& d = m.device(dev);
            out.index = dev;
            std::memcpy(out.name, d.name, sizeof out.name);
            out.name[sizeof out.name - 1] = '\0';
            std::memcpy(out.uuid, d.uuid, sizeof out.uuid);
            std::memcpy(out.pciBusId, d.pciBusId, sizeof out.pciBusId);
            out.pciBusId[sizeof out.pciBusId - 1] = '\0';
            out.numaNode = d.numaNode;
            out.memoryTotal = d.totalMemory;
            if (mtia::registry::Registry* reg = m.registry())
                out.memoryUsed = reg->used(static_cast<uint32_t>(dev));
            out.processCount = static_cast<int32_t>(m.processesOf(dev).size());
            return 0;
        });
        mtia::writeSized(info, out);
    });
}

MTIA_API mtiaError_t mtiamlDeviceGetProcesses(int32_t dev, uint32_t* count,
                                              mtiamlProcessInfo* infos) {
    return apiCall("mtiamlDeviceGetProcesses", [&] {
        mtia::requireNonNull(count, "count");
        // Entries lie at the caller's structSize apart: a program built against an older, smaller
        // mtiamlProcessInfo has its own stride (SizedArray), not sizeof(mtiamlProcessInfo).
        const mtia::SizedArray entries(infos, *count, "infos");
        const auto records = Management::with([&](Management& m) { return m.processesOf(dev); });
        if (infos == nullptr && *count == 0) {  // the query for the number of entries needed
            *count = static_cast<uint32_t>(records.size());
            return;
        }
        if (records.size() > *count) {
            const uint32_t capacity = *count;
            *count = static_cast<uint32_t>(records.size());
            fail(mtiaErrorInvalidValue, "infos holds {} entries; device {} has {} processes",
                 capacity, dev, records.size());
        }
        for (size_t i = 0; i < records.size(); ++i) {
            const mtia::registry::ProcessRecord& r = records[i];
            const mtia::registry::DeviceFigures& f = r.devices[static_cast<size_t>(dev)];
            mtiamlProcessInfo out{};
            out.pid = r.localPid;
            copyText(out.name, r.comm);
            out.memoryReserved = f.reserved;
            out.memoryAllocated = f.allocated;
            out.memoryPeakReserved = f.peakReserved;
            out.memoryPeakAllocated = f.peakAllocated;
            entries.write(static_cast<uint32_t>(i), out);
        }
        *count = static_cast<uint32_t>(records.size());
    });
}

MTIA_API mtiaError_t mtiamlDeviceGetUtilization(int32_t dev, mtiamlUtilization* utilization) {
    return apiCall("mtiamlDeviceGetUtilization", [&] {
        mtia::checkSized(utilization, "utilization");
        const Management::Utilization u =
            Management::with([&](Management& m) { return m.utilization(dev); });
        mtiamlUtilization out{};
        out.percent = u.percent;
        out.busyNs = u.busyNs;
        mtia::writeSized(utilization, out);
    });
}

MTIA_API mtiaError_t mtiamlDeviceGetTopology(int32_t dev, mtiamlTopology* topology) {
    return apiCall("mtiamlDeviceGetTopology", [&] {
        mtia::checkSized(topology, "topology");
        mtiamlTopology out{};
        Management::with([&](Management& m) {
            const mtia::topology::HostTopology& host = m.host();
            const mtia::topology::DeviceLocation self = m.location(dev);
            const mtia::topology::Placement placement = host.place(self);
            out.numaNode = placement.numaNode;
            copyText(out.cpuAffinity, placement.cpus);
            copyText(out.numaAffinity, placement.nodes);
            out.deviceCount = m.deviceCount();
            for (int32_t other = 0; other < m.deviceCount() && other < MTIAML_MAX_DEVICES; ++other)
                out.link[other] = toLink(host.link(self, m.location(other)));
            return 0;
        });
        mtia::writeSized(topology, out);
    });
}

MTIA_API mtiaError_t mtiamlMachineGetCount(uint32_t* count) {
    return apiCall("mtiamlMachineGetCount", [&] {
        mtia::requireNonNull(count, "count");
        *count = Management::with([](Management& m) { return m.refreshMachines(); });
    });
}

MTIA_API mtiaError_t mtiamlMachineGetDescription(uint32_t index, char* text, size_t size) {
    return apiCall("mtiamlMachineGetDescription", [&] {
        mtia::requireNonNull(text, "text");
        const std::string description =
            Management::with([&](Management& m) { return m.machineDescription(index); });
        if (description.size() >= size)
            fail(mtiaErrorInvalidValue, "size {} is too small: the description needs {} bytes",
                 size, description.size() + 1);
        std::memcpy(text, description.c_str(), description.size() + 1);
    });
}

MTIA_API mtiaError_t mtiamlMachineSelect(uint32_t index) {
    return apiCall("mtiamlMachineSelect", [&] {
        Management::with([&](Management& m) {
            m.selectMachine(index);
            return 0;
        });
    });
}

MTIA_API mtiaError_t mtiamlMachineCleanup(uint32_t index, mtiamlCleanupInfo* info) {
    return apiCall("mtiamlMachineCleanup", [&] {
        mtia::checkSized(info, "info");
        const Management::CleanupResult r =
            Management::with([&](Management& m) { return m.cleanup(index); });
        mtiamlCleanupInfo out{};
        out.reapedSlots = r.reaped;
        out.liveProcesses = r.live;
        out.removed = r.removed ? 1 : 0;
        copyText(out.registry, r.objectName);
        mtia::writeSized(info, out);
    });
}

MTIA_API mtiaError_t mtiamlProcessDumpSnapshot(uint32_t pid, const char* path, uint32_t timeoutMs) {
    return apiCall("mtiamlProcessDumpSnapshot", [&] {
        mtia::requireNonNull(path, "path");
        const std::string destination = path;
        if (destination.empty()) fail(mtiaErrorInvalidValue, "path is empty");
        if (pid == 0) fail(mtiaErrorInvalidValue, "pid 0 is no process");
        const bool json = endsWith(destination, ".json");
        // Moved while the request is still held: a cleanup meanwhile must not take the file for
        // abandoned.
        Management::with([&](Management& m) {
            m.requestSnapshot(pid, json, timeoutMs,
                              [&](const std::string& written) { moveFile(written, destination); });
        });
    });
}

}  // extern "C"
