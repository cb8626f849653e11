// DeviceGuardImplInterface for MTIA (PyTorch 2.13's method set): current device, streams and
// events over the C ABI. Registered once at load time; the registry never destroys it.
#include "mtia_check.h"
#include "streams.h"

#include <c10/core/Allocator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Logging.h>

namespace torch_mtia {
namespace {

// PyTorch 2.13 has two flags: PYTORCH_DEFAULT (timing off, torch.Event's default) and
// BACKEND_DEFAULT (timing on, torch.Event(enable_timing=True)).
unsigned eventFlags(c10::EventFlag flag) {
    switch (flag) {
    case c10::EventFlag::PYTORCH_DEFAULT: return mtiaEventDisableTiming;
    case c10::EventFlag::BACKEND_DEFAULT: return mtiaEventDefault;
    default: TORCH_CHECK(false, "torch_mtia: unknown event flag ", static_cast<int>(flag));
    }
}

class GuardImpl final : public c10::impl::DeviceGuardImplInterface {
public:
    c10::DeviceType type() const override { return kDeviceType; }

    c10::Device exchangeDevice(c10::Device d) const override {
        checkType(d);
        int previous = 0;
        MTIA_CHECK(mtiaExchangeDevice(d.index(), &previous));
        return {kDeviceType, static_cast<c10::DeviceIndex>(previous)};
    }

    c10::Device getDevice() const override { return {kDeviceType, currentDevice()}; }

    void setDevice(c10::Device d) const override {
        checkType(d);
        MTIA_CHECK(mtiaSetDevice(d.index()));
    }

    void uncheckedSetDevice(c10::Device d) const noexcept override { mtiaSetDevice(d.index()); }

    c10::Stream getStream(c10::Device d) const override { return currentStream(d.index()); }

    c10::Stream getDefaultStream(c10::Device d) const override { return defaultStream(d.index()); }

    c10::Stream getStreamFromGlobalPool(c10::Device d, bool isHighPriority) const override {
        return poolStream(d.index(), isHighPriority);
    }

    // torch.Stream(device="mtia", priority=p): as CUDA's, a stream of the pool (high priority when
    // p is negative), so that making Stream objects in a loop creates no runtime streams.
    c10::Stream getNewStream(c10::Device d, int priority) const override {
        return poolStream(resolveDevice(d.index()), priority < 0);
    }

    // noexcept: a stream that is not ours, or a failing runtime, leaves the current stream as it
    // was (logged) rather than terminating.
    c10::Stream exchangeStream(c10::Stream s) const noexcept override {
        const c10::Stream previous = currentStreamNoThrow(s.device_index());
        try {
            const mtiaError_t status = mtiaSetCurrentStream(streamHandle(s));
            if (status != mtiaSuccess)
                LOG(WARNING) << describeFailure(status, "mtiaSetCurrentStream");
        } catch (const std::exception& e) {
            LOG(WARNING) << "torch_mtia: exchangeStream: " << e.what();
        }
        return previous;
    }

    void destroyEvent(void* event, const c10::DeviceIndex) const noexcept override {
        const mtiaError_t status = mtiaEventDestroy(static_cast<mtiaEvent_t>(event));
        if (status != mtiaSuccess) LOG(WARNING) << describeFailure(status, "mtiaEventDestroy");
    }

    // Creates the event on the stream's device on first use; a record replaces the previous one,
    // and waits already issued keep the record they saw (the runtime's versioned events).
    void record(void** event, const c10::Stream& stream, const c10::DeviceIndex deviceIndex,
                const c10::EventFlag flag) const override {
        TORCH_CHECK(deviceIndex == -1 || deviceIndex == stream.device_index(),
                    "torch_mtia: event device index ", int{deviceIndex},
                    " does not match the stream's device ", int{stream.device_index()});
        mtiaStream_t handle = streamHandle(stream);
        if (*event == nullptr) {
            DeviceScope scope(stream.device_index());
            mtiaEvent_t created = nullptr;
            MTIA_CHECK(mtiaEventCreateWithFlags(&created, eventFlags(flag)));
            *event = created;
        }
        MTIA_CHECK(mtiaEventRecord(static_cast<mtiaEvent_t>(*event), handle));
    }

    void block(void* event, const c10::Stream& stream) const override {
        if (event == nullptr) return;  // never recorded: nothing to wait for
        MTIA_CHECK(mtiaStreamWaitEvent(streamHandle(stream), static_cast<mtiaEvent_t>(event),
                                       mtiaEventWaitDefault));
    }

    bool queryEvent(void* event) const override {
        if (event == nullptr) return true;
        const mtiaError_t status = mtiaEventQuery(static_cast<mtiaEvent_t>(event));
        if (status == mtiaErrorNotReady) return false;
        MTIA_CHECK(status);
        return true;
    }

    c10::DeviceIndex deviceCount() const noexcept override {
        int count = 0;
        mtiaGetDeviceCount(&count);
        return static_cast<c10::DeviceIndex>(count);
    }

    void synchronizeEvent(void* event) const override {
        if (event == nullptr) return;  // never recorded: complete
        MTIA_CHECK(mtiaEventSynchronize(static_cast<mtiaEvent_t>(event)));
    }

    // Milliseconds between two recorded events (both created with timing: torch.Event's
    // enable_timing=True); the runtime refuses events without timing or not yet recorded.
    double elapsedTime(void* start, void* end, const c10::DeviceIndex) const override {
        TORCH_CHECK(start != nullptr && end != nullptr,
                    "torch_mtia: elapsed_time needs both events recorded first");
        float ms = 0;
        MTIA_CHECK(mtiaEventElapsedTime(&ms, static_cast<mtiaEvent_t>(start),
                                        static_cast<mtiaEvent_t>(end)));
        return ms;
    }

    void synchronizeDevice(const c10::DeviceIndex index) const override {
        DeviceScope scope(resolveDevice(index));
        MTIA_CHECK(mtiaDeviceSynchronize());
    }

    bool isStreamCapturing(const c10::Stream& stream) const override {
        mtiaStreamCaptureStatus status = mtiaStreamCaptureStatusNone;
        MTIA_CHECK(mtiaStreamIsCapturing(streamHandle(stream), &status));
        return status != mtiaStreamCaptureStatusNone;
    }

    bool queryStream(const c10::Stream& stream) const override {
        const mtiaError_t status = mtiaStreamQuery(streamHandle(stream));
        if (status == mtiaErrorNotReady) return false;
        MTIA_CHECK(status);
        return true;
    }

    void synchronizeStream(const c10::Stream& stream) const override {
        MTIA_CHECK(mtiaStreamSynchronize(streamHandle(stream)));
    }

    void recordDataPtrOnStream(const c10::DataPtr& data, const c10::Stream& stream) const override {
        if (data.get() == nullptr) return;
        MTIA_CHECK(mtiaRecordStream(data.get(), streamHandle(stream)));
    }

private:
    static void checkType(c10::Device d) {
        TORCH_CHECK(d.type() == kDeviceType, "torch_mtia: device ", d, " is not an MTIA device");
    }
};

}  // namespace

C10_REGISTER_GUARD_IMPL(MTIA, GuardImpl);

}  // namespace torch_mtia
