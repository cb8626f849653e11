#include "streams.h"

#include "mtia_check.h"

#include <c10/util/Exception.h>
#include <c10/util/Logging.h>

#include <array>
#include <atomic>
#include <map>
#include <mutex>
#include <vector>

namespace torch_mtia {
namespace {

constexpr int kPoolSize = 8;  // streams per device and priority, as a round robin

struct DevicePool {
    std::once_flag once;
    std::array<std::array<mtiaStream_t, kPoolSize>, 2> streams{};  // [low, high]
    std::array<std::atomic<unsigned>, 2> next{};
};

std::vector<DevicePool>& pools() {
    // Leaked on purpose: PyTorch may ask for streams during interpreter teardown.
    static auto* all = [] {
        int count = 0;
        mtiaGetDeviceCount(&count);
        return new std::vector<DevicePool>(static_cast<size_t>(count));
    }();
    return *all;
}

}  // namespace

mtiaStream_t streamHandle(const c10::Stream& stream) {
    TORCH_CHECK(stream.device_type() == kDeviceType, "torch_mtia: stream ", stream,
                " is not an MTIA stream");
    mtiaStream_t handle = nullptr;
    MTIA_CHECK(mtiaStreamFromId(stream.id(), &handle));
    return handle;
}

c10::Stream toC10Stream(mtiaStream_t handle) {
    int64_t id = 0;
    int dev = 0;
    MTIA_CHECK(mtiaStreamGetId(handle, &id));
    MTIA_CHECK(mtiaStreamGetDevice(handle, &dev));
    return c10::Stream(c10::Stream::UNSAFE,
                       c10::Device(kDeviceType, static_cast<c10::DeviceIndex>(dev)), id);
}

c10::DeviceIndex currentDevice() {
    int dev = 0;
    MTIA_CHECK(mtiaGetDevice(&dev));
    return static_cast<c10::DeviceIndex>(dev);
}

c10::DeviceIndex resolveDevice(c10::DeviceIndex index) {
    return index < 0 ? currentDevice() : index;
}

c10::Stream currentStream(c10::DeviceIndex index) {
    mtiaStream_t handle = nullptr;
    MTIA_CHECK(mtiaGetCurrentStream(index, &handle));
    return toC10Stream(handle);
}

c10::Stream defaultStream(c10::DeviceIndex index) {
    mtiaStream_t handle = nullptr;
    MTIA_CHECK(mtiaGetDefaultStream(index, &handle));
    return toC10Stream(handle);
}

c10::Stream poolStream(c10::DeviceIndex index, bool highPriority) {
    index = resolveDevice(index);
    auto& all = pools();
    TORCH_CHECK(index >= 0 && static_cast<size_t>(index) < all.size(), "torch_mtia: device index ",
                int{index}, " is out of range (", all.size(), " devices)");
    DevicePool& pool = all[static_cast<size_t>(index)];
    std::call_once(pool.once, [&] {
        DeviceScope scope(index);
        int least = 0, greatest = 0;
        MTIA_CHECK(mtiaDeviceGetStreamPriorityRange(&least, &greatest));
        for (int p = 0; p < 2; ++p) {
            for (auto& s : pool.streams[static_cast<size_t>(p)]) {
                MTIA_CHECK(mtiaStreamCreateWithPriority(&s, mtiaStreamNonBlocking,
                                                        p == 0 ? least : greatest));
            }
        }
    });
    const size_t p = highPriority ? 1 : 0;
    const unsigned n = pool.next[p].fetch_add(1, std::memory_order_relaxed);
    return toC10Stream(pool.streams[p][n % kPoolSize]);
}

c10::Stream currentStreamNoThrow(c10::DeviceIndex index) noexcept {
    try {
        return currentStream(index);
    } catch (const std::exception& e) {
        LOG(WARNING) << "torch_mtia: no current stream on device " << int{index} << ": "
                     << e.what();
    }
    try {
        return defaultStream(index);
    } catch (const std::exception&) {}
    return c10::Stream(c10::Stream::UNSAFE, c10::Device(kDeviceType, index), 0);
}

DeviceScope::DeviceScope(c10::DeviceIndex index) {
    MTIA_CHECK(mtiaExchangeDevice(index, &previous_));
}

DeviceScope::~DeviceScope() {
    mtiaSetDevice(previous_);
}

}  // namespace torch_mtia
