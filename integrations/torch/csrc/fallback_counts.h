// How often each operator went through the CPU fallback (ops_tensor.cpp) instead of a MTIA
// kernel: the tests prove with it that the device kernels ran, and a user can see which operators
// of a model leave the device.
//
// Thread safety: every function may be called from any thread (one mutex). Blocking: never waits
// for the device. Legal during graph capture (host bookkeeping only). No errors.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace torch_mtia {

// One more fallback run of the operator `name` ("aten::cos", "aten::add.out", ...).
void countFallback(const std::string& name);
// Every operator that fell back since the last reset, with its count.
std::map<std::string, uint64_t> fallbackCounts();
void resetFallbackCounts();

}  // namespace torch_mtia
