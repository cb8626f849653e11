// Synchronous memory operations at the ABI: pointer classification, range
// checks against the allocation a pointer lies in, copies and fills ordered
// on the default stream of the device involved.
#pragma once

#include "allocator/allocation.hpp"
#include "runtime/context/runtime.hpp"

#include <mtia/mtia_types.h>

#include <optional>

namespace mtia {

struct DevicePointer {
    Device* device;
    allocator::Allocation allocation;
};

// The device allocation ptr lies in, if any. Thread-safe, non-blocking.
std::optional<DevicePointer> findDevicePointer(Runtime& rt, const void* ptr);

// Throws InvalidValue naming the argument (see mtiaMemcpy / mtiaMemset);
// kind must already be a valid mtiaMemcpyKind.
void copySync(Runtime& rt, void* dst, const void* src, size_t count, mtiaMemcpyKind kind);
void fillSync(Runtime& rt, void* ptr, int value, size_t count);
// Stream-ordered forms (mtiaMemcpyAsync, mtiaMemsetAsync, mtiaMemcpyPeerAsync): same checks; copies
// that involve pageable host memory finish before returning, the others only queue (pinned memory
// from mtiaMallocHost is recorded for the stream, as mtiaHostRecordStream does).
void copyAsync(Runtime& rt, void* dst, const void* src, size_t count, mtiaMemcpyKind kind,
               streams::Stream& stream);
void fillAsync(Runtime& rt, void* ptr, int value, size_t count, streams::Stream& stream);
void copyPeerAsync(Runtime& rt, void* dst, int dstDev, const void* src, int srcDev, size_t count,
                   streams::Stream& stream);
void pointerAttributes(Runtime& rt, const void* ptr, mtiaPointerAttributes* out);

}  // namespace mtia
