// The c10::Allocators of MTIA tensors.
//
// deviceAllocator: DeviceType::MTIA storage from the runtime's caching allocator (mtiaMalloc on the
// current device, for the current stream; mtiaFree, stream-ordered, when PyTorch drops the
// storage). pinnedAllocator: page-locked host memory from the runtime's host allocator
// (mtiaMallocHost, on the current device's NUMA node; mtiaFreeHost waits for the streams that
// recorded it), which PyTorch uses for pin_memory() and pinned CPU tensors through
// MTIAHooks::getPinnedMemoryAllocator.
//
// Thread safety: any thread. Blocking: allocation may wait for the driver; never for a stream.
// Legal during graph capture (device memory then comes from the capture's private pool). Errors:
// out of memory and other runtime failures become c10::Error (the OOM ladder ran first).
#pragma once

#include <c10/core/Allocator.h>
#include <c10/core/CachingDeviceAllocator.h>

namespace torch_mtia {

c10::Allocator* deviceAllocator();
c10::Allocator* pinnedAllocator();

// The device's allocator statistics (mtiaMemoryGetStats) as PyTorch's DeviceStats; index -1: the
// current device. Any thread; never waits for the device; legal during capture. Errors: an invalid
// device becomes c10::Error.
c10::CachingDeviceAllocator::DeviceStats deviceStats(c10::DeviceIndex index);

}  // namespace torch_mtia
