// <mtia/mtia_ml.h>: the management library. Unlike the rest of the C ABI it
// never initialises the runtime (see runtime/ml/management.hpp).
#include "runtime/core/api_guard.hpp"
#include "runtime/core/sized_struct.hpp"
#include "runtime/ml/management.hpp"

#include <mtia/mtia_ml.h>

#include <cstdio>
#include <cstring>

using mtia::apiCall;
using mtia::fail;
using mtia::ml::Management;

namespace {

mtiamlLinkType toLink(mtia::topology::Link link) { return static_cast<mtiamlLinkType>(static_cast<int32_t>(link)); }

template <size_t N>
void copyText(char (&dst)[N], const std::string& text) {
  std::snprintf(dst, N, "%s", text.c_str());
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
      if (mtia::registry::Registry* reg = m.registry()) out.memoryUsed = reg->used(static_cast<uint32_t>(dev));
      out.processCount = static_cast<int32_t>(m.processesOf(dev).size());
      return 0;
    });
    mtia::writeSized(info, out);
  });
}

MTIA_API mtiaError_t mtiamlDeviceGetProcesses(int32_t dev, uint32_t* count, mtiamlProcessInfo* infos) {
  return apiCall("mtiamlDeviceGetProcesses", [&] {
    mtia::requireNonNull(count, "count");
    if (*count > 0) mtia::requireNonNull(infos, "infos");
    for (uint32_t i = 0; i < *count; ++i) mtia::checkSized(&infos[i], "infos[i]");
    const auto records = Management::with([&](Management& m) { return m.processesOf(dev); });
    if (records.size() > *count) {
      const uint32_t capacity = *count;
      *count = static_cast<uint32_t>(records.size());
      fail(mtiaErrorInvalidValue, "infos holds {} entries; device {} has {} processes", capacity, dev, records.size());
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
      mtia::writeSized(&infos[i], out);
    }
    *count = static_cast<uint32_t>(records.size());
  });
}

MTIA_API mtiaError_t mtiamlDeviceGetUtilization(int32_t dev, mtiamlUtilization* utilization) {
  return apiCall("mtiamlDeviceGetUtilization", [&] {
    mtia::checkSized(utilization, "utilization");
    Management::with([&](Management& m) { return m.device(dev).numaNode; });
    fail(mtiaErrorNotSupported, "device {}: the simulated device does not record busy time", dev);
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
      fail(mtiaErrorInvalidValue, "size {} is too small: the description needs {} bytes", size, description.size() + 1);
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

}  // extern "C"
