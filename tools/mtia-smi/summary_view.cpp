// The no-argument view, -L and -q.
#include "views.hpp"

#include <fmt/format.h>

namespace mtia::smi {
namespace {

std::string numaText(int32_t node) {
    return node < 0 ? "N/A" : std::to_string(node);
}
std::string utilText(const DeviceSample& d) {
    return d.utilization ? fmt::format("{}%", *d.utilization) : "N/A";
}
std::string pidText(uint32_t pid) {
    return pid == 0 ? "N/A" : std::to_string(pid);
}

void deviceJson(JsonBuilder& json, const DeviceSample& d) {
    json.number("index", static_cast<uint64_t>(d.info.index))
        .string("name", d.info.name)
        .string("uuid", uuidText(d.info.uuid))
        .string("pci_bus_id", d.info.pciBusId);
    if (d.info.numaNode < 0) {
        json.null("numa_node");
    } else {
        json.number("numa_node", static_cast<uint64_t>(d.info.numaNode));
    }
    json.number("memory_total_bytes", d.info.memoryTotal)
        .number("memory_used_bytes", d.info.memoryUsed);
    if (d.utilization) {
        json.number("utilization_percent", *d.utilization);
    } else {
        json.null("utilization_percent");
    }
    json.number("processes", static_cast<uint64_t>(d.info.processCount));
}

void processJson(JsonBuilder& json, const ProcessSample& p) {
    if (p.info.pid == 0) {
        json.null("pid");
    } else {
        json.number("pid", p.info.pid);
    }
    json.string("name", p.info.name)
        .number("device", static_cast<uint64_t>(p.device))
        .number("memory_reserved_bytes", p.info.memoryReserved)
        .number("memory_allocated_bytes", p.info.memoryAllocated)
        .number("memory_peak_reserved_bytes", p.info.memoryPeakReserved)
        .number("memory_peak_allocated_bytes", p.info.memoryPeakAllocated);
}

std::string document(const MachineSample& sample, const std::string& version, bool detail) {
    JsonBuilder json;
    json.beginObject().number("schema_version", kSchemaVersion).string("version", version);
    json.number("timestamp_ms", sample.timeMs);
    json.beginArray("devices");
    for (const DeviceSample& d : sample.devices) {
        json.beginObject();
        deviceJson(json, d);
        if (detail) {
            json.beginArray("process_list");
            for (const ProcessSample& p : sample.processes) {
                if (p.device != d.info.index) continue;
                json.beginObject();
                processJson(json, p);
                json.endObject();
            }
            json.endArray();
        }
        json.endObject();
    }
    json.endArray();
    if (!detail) {
        json.beginArray("processes");
        for (const ProcessSample& p : sample.processes) {
            json.beginObject();
            processJson(json, p);
            json.endObject();
        }
        json.endArray();
    }
    json.endObject();
    return json.text() + "\n";
}

}  // namespace

std::string summaryText(const MachineSample& sample, const std::string& version) {
    const std::string rule =
        "+-----+------------------+--------------+------+-----------------------+------+\n";
    std::string out = fmt::format("MTIA-SMI {}\n", version);
    out += rule;
    out += "| Idx | Name             | Bus-Id       | NUMA | Memory-Usage          | Util |\n";
    out += rule;
    for (const DeviceSample& d : sample.devices) {
        const std::string usage =
            fmt::format("{}MiB / {}MiB", toMiB(d.info.memoryUsed), toMiB(d.info.memoryTotal));
        out += fmt::format("| {:>3} | {:<16.16} | {:<12} | {:>4} | {:>21} | {:>4} |\n",
                           d.info.index, d.info.name, d.info.pciBusId, numaText(d.info.numaNode),
                           usage, utilText(d));
    }
    out += rule;
    out += "\nProcesses:\n";
    const std::string procRule =
        "+--------+---------+------------------+------------+------------+------------+\n";
    out += procRule;
    out += "| Device |     PID | Name             |   Reserved |  Allocated |       Peak |\n";
    out += procRule;
    if (sample.processes.empty()) out += fmt::format("| {:<74} |\n", "No running processes found");
    for (const ProcessSample& p : sample.processes) {
        out += fmt::format("| {:>6} | {:>7} | {:<16.16} | {:>7}MiB | {:>7}MiB | {:>7}MiB |\n",
                           p.device, pidText(p.info.pid), p.info.name, toMiB(p.info.memoryReserved),
                           toMiB(p.info.memoryAllocated), toMiB(p.info.memoryPeakAllocated));
    }
    out += procRule;
    return out;
}

std::string summaryJson(const MachineSample& sample, const std::string& version) {
    return document(sample, version, false);
}

std::string listText(const MachineSample& sample) {
    std::string out;
    for (const DeviceSample& d : sample.devices)
        out += fmt::format("MTIA {}: {} (UUID: {})\n", d.info.index, d.info.name,
                           uuidText(d.info.uuid));
    return out;
}

std::string listJson(const MachineSample& sample) {
    JsonBuilder json;
    json.beginObject().number("schema_version", kSchemaVersion).beginArray("devices");
    for (const DeviceSample& d : sample.devices) {
        json.beginObject()
            .number("index", static_cast<uint64_t>(d.info.index))
            .string("name", d.info.name)
            .string("uuid", uuidText(d.info.uuid))
            .endObject();
    }
    json.endArray().endObject();
    return json.text() + "\n";
}

std::string detailText(const MachineSample& sample, const std::string& version) {
    std::string out = fmt::format(
        "==============MTIA-SMI LOG==============\n\nMTIA-SMI version          : {}\n", version);
    out += fmt::format("Attached devices          : {}\n", sample.devices.size());
    for (const DeviceSample& d : sample.devices) {
        out += fmt::format("\nMTIA {}\n", d.info.index);
        out += fmt::format("    Product Name          : {}\n", d.info.name);
        out += fmt::format("    UUID                  : {}\n", uuidText(d.info.uuid));
        out += fmt::format("    Bus Id                : {}\n", d.info.pciBusId);
        out += fmt::format("    NUMA Node             : {}\n", numaText(d.info.numaNode));
        out += "    Memory Usage\n";
        out += fmt::format("        Total             : {} MiB\n", toMiB(d.info.memoryTotal));
        out += fmt::format("        Used              : {} MiB\n", toMiB(d.info.memoryUsed));
        const uint64_t used =
            d.info.memoryUsed < d.info.memoryTotal ? d.info.memoryUsed : d.info.memoryTotal;
        out +=
            fmt::format("        Free              : {} MiB\n", toMiB(d.info.memoryTotal - used));
        out += "    Utilization\n";
        out += fmt::format("        Device            : {}\n", utilText(d));
        out += "    Processes\n";
        bool any = false;
        for (const ProcessSample& p : sample.processes) {
            if (p.device != d.info.index) continue;
            any = true;
            out += fmt::format("        Process ID        : {}\n", pidText(p.info.pid));
            out += fmt::format("            Name          : {}\n", p.info.name);
            out +=
                fmt::format("            Reserved      : {} MiB\n", toMiB(p.info.memoryReserved));
            out +=
                fmt::format("            Allocated     : {} MiB\n", toMiB(p.info.memoryAllocated));
            out += fmt::format("            Peak          : {} MiB\n",
                               toMiB(p.info.memoryPeakAllocated));
            out += fmt::format("            Peak Reserved : {} MiB\n",
                               toMiB(p.info.memoryPeakReserved));
        }
        if (!any) out += "        None\n";
    }
    return out;
}

std::string detailJson(const MachineSample& sample, const std::string& version) {
    return document(sample, version, true);
}

}  // namespace mtia::smi
