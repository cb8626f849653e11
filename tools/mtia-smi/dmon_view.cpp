// dmon: scrolling per-device rows under a '#' header, nvidia-smi dmon style.
#include "views.hpp"

#include <fmt/format.h>

namespace mtia::smi {

std::string dmonHeader() {
    return "# idx     mused    mtotal  procs  util\n"
           "# Idx       MiB       MiB    num     %\n";
}

std::string dmonRows(const MachineSample& sample) {
    std::string out;
    for (const DeviceSample& d : sample.devices) {
        const std::string util = d.utilization ? std::to_string(*d.utilization) : "-";
        out +=
            fmt::format("  {:>3} {:>9} {:>9} {:>6} {:>5}\n", d.info.index, toMiB(d.info.memoryUsed),
                        toMiB(d.info.memoryTotal), d.info.processCount, util);
    }
    return out;
}

std::string dmonJson(const MachineSample& sample) {
    JsonBuilder json;
    json.beginObject()
        .number("schema_version", kSchemaVersion)
        .number("timestamp_ms", sample.timeMs);
    json.beginArray("devices");
    for (const DeviceSample& d : sample.devices) {
        json.beginObject()
            .number("index", static_cast<uint64_t>(d.info.index))
            .number("memory_used_mib", toMiB(d.info.memoryUsed))
            .number("memory_total_mib", toMiB(d.info.memoryTotal))
            .number("processes", static_cast<uint64_t>(d.info.processCount));
        if (d.utilization) {
            json.number("utilization_percent", *d.utilization);
        } else {
            json.null("utilization_percent");
        }
        json.endObject();
    }
    json.endArray().endObject();
    return json.text() + "\n";
}

}  // namespace mtia::smi
