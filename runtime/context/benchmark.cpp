#include "runtime/context/benchmark.hpp"

#include "graph/capture.hpp"
#include "runtime/context/device.hpp"
#include "runtime/context/memory_ops.hpp"
#include "streams/event.hpp"

#include <algorithm>
#include <memory>
#include <vector>

namespace mtia {
namespace {

// The cache-flush buffer: from the caching allocator on the benchmark's stream, so a later call on
// that stream gets the same block back without a device allocation. Freed on every path (a free
// on a faulted device succeeds; the fault is reported by the call that found it).
class FlushBuffer {
public:
    FlushBuffer(Device& dev, streams::Stream& stream, uint64_t bytes)
        : mem_(dev.memory()), ptr_(bytes > 0 ? mem_.allocate(bytes, stream) : nullptr),
          bytes_(bytes) {}
    ~FlushBuffer() {
        if (ptr_ == nullptr) return;
        try {
            mem_.free(ptr_);
        } catch (...) {  // the block stays with the allocator either way; nothing to report here
        }
    }
    FlushBuffer(const FlushBuffer&) = delete;
    FlushBuffer& operator=(const FlushBuffer&) = delete;

    void write(Runtime& rt, streams::Stream& stream, int value) const {
        if (ptr_ != nullptr) fillAsync(rt, ptr_, value, bytes_, stream);
    }

private:
    allocator::DeviceAllocator& mem_;
    void* const ptr_;
    const uint64_t bytes_;
};

}  // namespace

void benchmarkKernel(Runtime& rt, const Function& fn, streams::Stream& stream, mtiaDim3 grid,
                     mtiaDim3 block, void** args, size_t sharedMem, const BenchmarkPlan& plan,
                     float* timesMs) {
    // It synchronizes its stream, so it is illegal where mtiaStreamSynchronize is.
    if (graph::CaptureTable::anyActive()) [[unlikely]]
        graph::CaptureTable::instance().checkStreamSync(stream, "mtiaBenchmarkKernel");
    Device& dev = rt.device(stream.device());
    dev.checkHealthy();

    std::vector<std::unique_ptr<streams::Event>> events;
    events.reserve(2 * static_cast<size_t>(plan.repetitions));
    for (size_t i = 0; i < 2 * static_cast<size_t>(plan.repetitions); ++i)
        events.push_back(std::make_unique<streams::Event>(rt.driver(), dev.ordinal(),
                                                          dev.driverDevice(), mtiaEventDefault));
    const FlushBuffer flush(dev, stream, plan.flushCache ? dev.info().l2CacheSize : 0);

    for (uint32_t i = 0; i < plan.warmup; ++i)
        rt.kernels().launch(fn, dev, grid, block, args, sharedMem, stream);
    for (uint32_t i = 0; i < plan.repetitions; ++i) {
        // Untimed: the write lands before the start record, and evicts what the last run left.
        flush.write(rt, stream, static_cast<int>(i & 0xff));
        events[2 * i]->record(stream);
        rt.kernels().launch(fn, dev, grid, block, args, sharedMem, stream);
        events[2 * i + 1]->record(stream);
    }
    // Sleeping, not polling: on the simulated device the kernels run on host cores too.
    stream.synchronize(true);
    dev.checkHealthy();

    std::vector<float> times(plan.repetitions);
    for (uint32_t i = 0; i < plan.repetitions; ++i)
        times[i] = streams::Event::elapsedMs(*events[2 * i], *events[2 * i + 1]);
    std::copy(times.begin(), times.end(), timesMs);
}

}  // namespace mtia
