// Launches of the runtime's built-in kernels on one block of one thread.
#pragma once

#include <mtia/mtia.h>

#include <cstdint>

namespace mtia_test {

inline constexpr mtiaDim3 kOne{1, 1, 1};

// The built-in kernel name (null when the lookup fails).
mtiaFunction_t builtin(const char* name);

// Each launcher looks its kernel up once per process (runtime calls are not permitted inside host
// functions, where some tests launch).
mtiaFunction_t noopKernel();
mtiaError_t launchNoop(mtiaStream_t s);
// A kernel that occupies its engine for us microseconds.
mtiaError_t launchSleep(mtiaStream_t s, uint64_t us);
mtiaError_t launchFill(mtiaStream_t s, float* dst, float value, uint64_t n);
mtiaError_t launchCopy(mtiaStream_t s, float* dst, const float* src, uint64_t n);
mtiaError_t launchScale(mtiaStream_t s, float* out, const float* a, float k, uint64_t n);

}  // namespace mtia_test
