// The c10::Allocator of PrivateUse1: tensor storage from the runtime's caching allocator
// (mtiaMalloc on the current device, for the current stream; mtiaFree when PyTorch drops the
// storage).
#pragma once

#include <c10/core/Allocator.h>

namespace torch_mtia {

c10::Allocator* deviceAllocator();

}  // namespace torch_mtia
