// topo -m: the device x device link matrix with CPU and NUMA affinity.
#include "smi_error.hpp"
#include "views.hpp"

#include <fmt/format.h>

namespace mtia::smi {
namespace {

const char* linkText(mtiamlLinkType link) {
    switch (link) {
    case mtiamlLinkSelf: return "X";
    case mtiamlLinkPix: return "PIX";
    case mtiamlLinkPxb: return "PXB";
    case mtiamlLinkPhb: return "PHB";
    case mtiamlLinkNode: return "NODE";
    default: return "SYS";
    }
}

std::string orNA(const char* text) {
    return *text == '\0' ? "N/A" : text;
}

}  // namespace

TopologySample takeTopology(int32_t deviceCount) {
    TopologySample sample;
    for (int32_t dev = 0; dev < deviceCount; ++dev) {
        mtiamlTopology topology = MTIAML_TOPOLOGY_INIT;
        check(mtiamlDeviceGetTopology(dev, &topology), "mtiamlDeviceGetTopology");
        sample.devices.push_back(topology);
    }
    return sample;
}

std::string topoText(const TopologySample& sample) {
    std::string out = "      ";
    const size_t n = sample.devices.size();
    for (size_t j = 0; j < n; ++j) out += fmt::format("{:<8}", fmt::format("MTIA{}", j));
    out += fmt::format("{:<16}{}\n", "CPU Affinity", "NUMA Affinity");
    for (size_t i = 0; i < n; ++i) {
        const mtiamlTopology& t = sample.devices[i];
        out += fmt::format("{:<6}", fmt::format("MTIA{}", i));
        for (size_t j = 0; j < n; ++j) out += fmt::format("{:<8}", linkText(t.link[j]));
        out += fmt::format("{:<16}{}\n", orNA(t.cpuAffinity), orNA(t.numaAffinity));
    }
    out +=
        "\nLegend:\n\n"
        "  X    = Self\n"
        "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes\n"
        "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges "
        "within a NUMA node\n"
        "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)\n"
        "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host "
        "Bridge)\n"
        "  PIX  = Connection traversing at most a single PCIe bridge\n";
    return out;
}

std::string topoJson(const TopologySample& sample) {
    JsonBuilder json;
    json.beginObject().number("schema_version", kSchemaVersion).beginArray("devices");
    for (size_t i = 0; i < sample.devices.size(); ++i) {
        const mtiamlTopology& t = sample.devices[i];
        json.beginObject().number("index", i);
        if (*t.cpuAffinity == '\0') {
            json.null("cpu_affinity");
        } else {
            json.string("cpu_affinity", t.cpuAffinity);
        }
        if (*t.numaAffinity == '\0') {
            json.null("numa_affinity");
        } else {
            json.string("numa_affinity", t.numaAffinity);
        }
        json.beginArray("links");
        for (size_t j = 0; j < sample.devices.size(); ++j) json.string("", linkText(t.link[j]));
        json.endArray().endObject();
    }
    json.endArray().endObject();
    return json.text() + "\n";
}

}  // namespace mtia::smi
