// mtiaBenchmarkKernel: a kernel timed with device events, repetition by repetition, as Triton's
// do_bench times a Python callable.
#pragma once

#include "runtime/context/kernels.hpp"
#include "runtime/context/runtime.hpp"

#include <mtia/mtia_types.h>

#include <cstdint>

namespace mtia {

struct BenchmarkPlan {
    uint32_t warmup = 0;
    uint32_t repetitions = 1;  // >= 1
    bool flushCache = false;
};

// Launches fn on stream plan.warmup times untimed, then plan.repetitions times between two timed
// events each (with flushCache, a fill of the device's l2CacheSize bytes before each), synchronizes
// the stream once and writes the elapsed milliseconds to timesMs[0 .. repetitions). Blocking.
// Throws what mtiaBenchmarkKernel documents; timesMs is written only on success, and every event
// and buffer made here is released on every path.
void benchmarkKernel(Runtime& rt, const Function& fn, streams::Stream& stream, mtiaDim3 grid,
                     mtiaDim3 block, void** args, size_t sharedMem, const BenchmarkPlan& plan,
                     float* timesMs);

}  // namespace mtia
