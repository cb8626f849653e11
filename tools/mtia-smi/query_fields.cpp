#include "query_fields.hpp"

#include "smi_error.hpp"

#include <cstdio>
#include <ctime>
#include <sstream>

namespace mtia::smi {
namespace {

std::optional<std::string> num(uint64_t v) {
    return std::to_string(v);
}

const DeviceSample* deviceOf(const MachineSample& s, int32_t index) {
    for (const DeviceSample& d : s.devices)
        if (d.info.index == index) return &d;
    return nullptr;
}

std::string trim(const std::string& text) {
    const size_t begin = text.find_first_not_of(" \t");
    if (begin == std::string::npos) return "";
    return text.substr(begin, text.find_last_not_of(" \t") - begin + 1);
}

}  // namespace

const std::vector<Field<DeviceSample>>& deviceFields() {
    using S = const MachineSample&;
    using D = const DeviceSample&;
    static const std::vector<Field<DeviceSample>> fields = {
        {"timestamp", "", false, "Wall-clock time of the reading, YYYY/MM/DD HH:MM:SS.mmm (UTC).",
         [](S s, D) -> std::optional<std::string> {
             const time_t seconds = static_cast<time_t>(s.timeMs / 1000);
             struct tm tm {};
             gmtime_r(&seconds, &tm);
             char text[40];
             std::snprintf(text, sizeof text, "%04d/%02d/%02d %02d:%02d:%02d.%03u",
                           tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                           tm.tm_sec, static_cast<unsigned>(s.timeMs % 1000));
             return std::string(text);
         }},
        {"count", "", true, "Number of devices of the machine.",
         [](S s, D) { return num(s.devices.size()); }},
        {"index", "", true, "Index of the device on its machine (0-based).",
         [](S, D d) { return num(static_cast<uint64_t>(d.info.index)); }},
        {"name", "", false, "Product name of the device.",
         [](S, D d) { return std::optional<std::string>(d.info.name); }},
        {"uuid", "", false, "Globally unique id, MTIA-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx.",
         [](S, D d) { return std::optional<std::string>(uuidText(d.info.uuid)); }},
        {"pci.bus_id", "", false, "PCI bus id, domain:bus:device.function in hex.",
         [](S, D d) { return std::optional<std::string>(d.info.pciBusId); }},
        {"numa_node", "", true, "Host NUMA node the device is attached to.",
         [](S, D d) -> std::optional<std::string> {
             if (d.info.numaNode < 0) return std::nullopt;
             return std::to_string(d.info.numaNode);
         }},
        {"memory.total", "MiB", true, "Device memory.",
         [](S, D d) { return num(toMiB(d.info.memoryTotal)); }},
        {"memory.used", "MiB", true, "Device memory reserved by every process of the machine.",
         [](S, D d) { return num(toMiB(d.info.memoryUsed)); }},
        {"memory.free", "MiB", true, "memory.total - memory.used.",
         [](S, D d) {
             const uint64_t used =
                 d.info.memoryUsed < d.info.memoryTotal ? d.info.memoryUsed : d.info.memoryTotal;
             return num(toMiB(d.info.memoryTotal - used));
         }},
        {"utilization.gpu", "%", true,
         "Share of the last interval the device was busy ([N/A]: the device does not record busy "
         "time).",
         [](S, D d) -> std::optional<std::string> {
             if (!d.utilization) return std::nullopt;
             return std::to_string(*d.utilization);
         }},
        {"processes", "", true, "Live processes holding memory of the device.",
         [](S, D d) { return num(static_cast<uint64_t>(d.info.processCount)); }},
    };
    return fields;
}

const std::vector<Field<ProcessSample>>& processFields() {
    using S = const MachineSample&;
    using P = const ProcessSample&;
    static const std::vector<Field<ProcessSample>> fields = {
        {"pid", "", true,
         "Process id in this pid namespace ([N/A]: the process is in a namespace not visible "
         "here).",
         [](S, P p) -> std::optional<std::string> {
             if (p.info.pid == 0) return std::nullopt;
             return std::to_string(p.info.pid);
         }},
        {"process_name", "", false, "Command name of the process.",
         [](S, P p) { return std::optional<std::string>(p.info.name); }},
        {"device", "", true, "Index of the device.",
         [](S, P p) { return num(static_cast<uint64_t>(p.device)); }},
        {"gpu_uuid", "", false, "UUID of the device.",
         [](S s, P p) -> std::optional<std::string> {
             const DeviceSample* d = deviceOf(s, p.device);
             if (d == nullptr) return std::nullopt;
             return uuidText(d->info.uuid);
         }},
        {"gpu_bus_id", "", false, "PCI bus id of the device.",
         [](S s, P p) -> std::optional<std::string> {
             const DeviceSample* d = deviceOf(s, p.device);
             if (d == nullptr) return std::nullopt;
             return std::string(d->info.pciBusId);
         }},
        {"used_memory", "MiB", true, "Device memory the process holds (= memory.reserved).",
         [](S, P p) { return num(toMiB(p.info.memoryReserved)); }},
        {"memory.reserved", "MiB", true, "Device memory the process's caching allocator holds.",
         [](S, P p) { return num(toMiB(p.info.memoryReserved)); }},
        {"memory.allocated", "MiB", true, "Of memory.reserved, what the program was handed.",
         [](S, P p) { return num(toMiB(p.info.memoryAllocated)); }},
        {"memory.peak", "MiB", true, "Highest memory.allocated so far.",
         [](S, P p) { return num(toMiB(p.info.memoryPeakAllocated)); }},
        {"memory.peak_reserved", "MiB", true, "Highest memory.reserved so far.",
         [](S, P p) { return num(toMiB(p.info.memoryPeakReserved)); }},
    };
    return fields;
}

template <typename Row>
std::vector<const Field<Row>*> selectFields(const std::vector<Field<Row>>& table,
                                            const std::string& list, const char* option) {
    std::vector<const Field<Row>*> out;
    std::stringstream in(list);
    std::string item;
    while (std::getline(in, item, ',')) {
        const std::string name = trim(item);
        const Field<Row>* found = nullptr;
        for (const Field<Row>& field : table)
            if (name == field.name) found = &field;
        if (found == nullptr)
            throw SmiError(kExitBadArguments, std::string(option) + ": unknown field '" + name +
                                                  "' (the --help-query-* options list them)");
        out.push_back(found);
    }
    if (out.empty()) throw SmiError(kExitBadArguments, std::string(option) + ": no field given");
    return out;
}

template <typename Row>
std::string fieldHelp(const std::vector<Field<Row>>& table, const char* title) {
    std::string out = std::string(title) + "\n\n";
    for (const Field<Row>& field : table) {
        out += std::string("\"") + field.name + "\"";
        if (*field.unit != '\0') out += std::string(" [") + field.unit + "]";
        out += std::string("\n    ") + field.help + "\n";
    }
    return out;
}

template std::vector<const Field<DeviceSample>*>
selectFields(const std::vector<Field<DeviceSample>>&, const std::string&, const char*);
template std::vector<const Field<ProcessSample>*>
selectFields(const std::vector<Field<ProcessSample>>&, const std::string&, const char*);
template std::string fieldHelp(const std::vector<Field<DeviceSample>>&, const char*);
template std::string fieldHelp(const std::vector<Field<ProcessSample>>&, const char*);

}  // namespace mtia::smi
