// DistributedDataParallel's reducer times a sample of iterations (forward, backward compute,
// backward communication) with a timer made for the parameters' device type through
// c10d::TimerRegistry; it finds none for MTIA otherwise, warns, and its logging data
// (DistributedDataParallel._get_ddp_logging_data()) then lacks the times that CUDA users read.
// This timer measures on the device: events with timing recorded on the current stream, so that
// the times are those of the device's work, not of the host queueing it.
#include <c10/core/Event.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/csrc/distributed/c10d/reducer_timer.hpp>

#include <array>
#include <cstdint>
#include <optional>

namespace torch_mtia::dist {
namespace {

class MtiaDdpTimer final : public c10d::Timer {
public:
    explicit MtiaDdpTimer(c10::Device device)
        : device_(device), events_{event(), event(), event(), event(), event()} {}

    // Called by the reducer on the thread that runs the step (the forward's caller, or the
    // autograd engine's thread for the device): the event goes on that thread's current stream.
    void record(Event which) override {
        c10d::Timer::record(which);  // the host timestamp, which the reducer reads as well
        const auto* impl = c10::impl::getDeviceGuardImpl(c10::DeviceType::MTIA);
        slot(which).record(impl->getStream(device_));
    }

    // Blocks until both events have completed (the reducer asks only at its sampled iterations,
    // after the step); nullopt when either was not recorded in this iteration's sample.
    std::optional<int64_t> measureDifference(Event start, Event end) override {
        c10::Event& first = slot(start);
        c10::Event& last = slot(end);
        if (!first.was_marked_for_recording() || !last.was_marked_for_recording()) {
            return std::nullopt;
        }
        first.synchronize();
        last.synchronize();
        const double ms = first.elapsedTime(last);
        // An end recorded before its start (the reducer records them from different threads)
        // has no meaning as a duration.
        if (ms < 0) return std::nullopt;
        return static_cast<int64_t>(ms * 1e6);
    }

private:
    static c10::Event event() {
        // BACKEND_DEFAULT: the runtime's default events, which keep timing.
        return c10::Event(c10::DeviceType::MTIA, c10::EventFlag::BACKEND_DEFAULT);
    }

    c10::Event& slot(Event which) { return events_.at(static_cast<size_t>(which)); }

    c10::Device device_;
    std::array<c10::Event, 5> events_;  // indexed by c10d::Timer::Event
};

}  // namespace
}  // namespace torch_mtia::dist

// The registry's names are c10d's.
namespace c10d {
C10_REGISTER_TYPED_CLASS(TimerRegistry, c10::kMTIA, torch_mtia::dist::MtiaDdpTimer);
}  // namespace c10d
