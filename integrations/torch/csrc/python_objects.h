// The Python objects the hooks return (new references; the caller holds the GIL).
//
// memoryStatsObject: PyTorch's allocator statistics for one device, in two shapes at once: the
// nested dict torch.cuda.memory_stats builds before flattening ("allocated_bytes" -> "all" ->
// "current", ...), and under "dram" the keys torch.mtia.memory_allocated / max_memory_allocated
// read ("allocated_bytes", "peak_bytes", "reserved_bytes", "peak_reserved_bytes").
// devicePropertiesObject: the fields of mtiaDeviceProp that torch.cuda's properties also carry,
// under torch.cuda's names (name, total_memory, multi_processor_count, major, minor, ...).
#pragma once

#include <mtia/mtia.h>

#include <c10/core/CachingDeviceAllocator.h>

#include <Python.h>

namespace torch_mtia {

PyObject* memoryStatsObject(const c10::CachingDeviceAllocator::DeviceStats& stats);
PyObject* devicePropertiesObject(const mtiaDeviceProp& prop);

}  // namespace torch_mtia
