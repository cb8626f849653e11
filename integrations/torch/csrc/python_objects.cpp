#include "python_objects.h"

#include <torch/csrc/utils/pybind.h>

namespace py = pybind11;

namespace torch_mtia {
namespace {

py::dict stat(const c10::CachingAllocator::Stat& s) {
    py::dict d;
    d["current"] = s.current;
    d["peak"] = s.peak;
    d["allocated"] = s.allocated;
    d["freed"] = s.freed;
    return d;
}

py::dict statArray(const c10::CachingAllocator::StatArray& a) {
    using c10::CachingAllocator::StatType;
    py::dict d;
    d["all"] = stat(a[static_cast<size_t>(StatType::AGGREGATE)]);
    d["small_pool"] = stat(a[static_cast<size_t>(StatType::SMALL_POOL)]);
    d["large_pool"] = stat(a[static_cast<size_t>(StatType::LARGE_POOL)]);
    return d;
}

}  // namespace

PyObject* memoryStatsObject(const c10::CachingDeviceAllocator::DeviceStats& s) {
    using c10::CachingAllocator::StatType;
    py::dict d;
    d["allocation"] = statArray(s.allocation);
    d["segment"] = statArray(s.segment);
    d["active"] = statArray(s.active);
    d["inactive_split"] = statArray(s.inactive_split);
    d["allocated_bytes"] = statArray(s.allocated_bytes);
    d["reserved_bytes"] = statArray(s.reserved_bytes);
    d["active_bytes"] = statArray(s.active_bytes);
    d["inactive_split_bytes"] = statArray(s.inactive_split_bytes);
    d["requested_bytes"] = statArray(s.requested_bytes);
    d["num_alloc_retries"] = s.num_alloc_retries;
    d["num_ooms"] = s.num_ooms;
    d["num_sync_all_streams"] = s.num_sync_all_streams;
    d["num_device_alloc"] = s.num_device_alloc;
    d["num_device_free"] = s.num_device_free;
    d["oversize_allocations"] = stat(s.oversize_allocations);
    d["oversize_segments"] = stat(s.oversize_segments);
    d["max_split_size"] = s.max_split_size;
    const auto& allocated = s.allocated_bytes[static_cast<size_t>(StatType::AGGREGATE)];
    const auto& reserved = s.reserved_bytes[static_cast<size_t>(StatType::AGGREGATE)];
    py::dict dram;
    dram["allocated_bytes"] = allocated.current;
    dram["peak_bytes"] = allocated.peak;
    dram["reserved_bytes"] = reserved.current;
    dram["peak_reserved_bytes"] = reserved.peak;
    d["dram"] = dram;
    return d.release().ptr();
}

PyObject* devicePropertiesObject(const mtiaDeviceProp& p) {
    py::dict d;
    d["name"] = std::string(p.name);
    d["total_memory"] = p.totalGlobalMem;
    d["multi_processor_count"] = p.multiProcessorCount;
    d["major"] = p.major;
    d["minor"] = p.minor;
    d["pci_bus_id"] = std::string(p.pciBusId);
    d["pci_domain_id"] = p.pciDomainID;
    d["pci_device_id"] = p.pciDeviceID;
    d["numa_node"] = p.numaNode;
    d["max_threads_per_block"] = p.maxThreadsPerBlock;
    d["shared_memory_per_block"] = p.sharedMemPerBlock;
    d["allocation_granularity"] = p.allocationGranularity;
    // Kernel limits and the cache size, for compilers (Inductor's fusion guardrails, do_bench).
    d["max_kernel_args"] = p.maxKernelArgs;
    d["max_kernel_buffers"] = p.maxKernelBuffers;
    d["max_kernel_arg_bytes"] = p.maxKernelArgBytes;
    d["L2_cache_size"] = p.l2CacheSize;
    d["stream_priority_range"] = py::make_tuple(p.streamPriorityLeast, p.streamPriorityGreatest);
    char uuid[37];
    const uint8_t* u = p.uuid;
    std::snprintf(uuid, sizeof uuid,
                  "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
                  u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
                  u[14], u[15]);
    d["uuid"] = std::string(uuid);
    return d.release().ptr();
}

}  // namespace torch_mtia
