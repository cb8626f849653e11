#include "allocator.h"

#include "mtia_check.h"
#include "streams.h"

#include <c10/util/Logging.h>

namespace torch_mtia {
namespace {

void freeDeviceMemory(void* ptr) {
    // Runs in storage destructors, which must not throw. mtiaFree is stream-ordered and never
    // waits.
    const mtiaError_t status = mtiaFree(ptr);
    if (status != mtiaSuccess) LOG(WARNING) << describeFailure(status, "mtiaFree");
}

class DeviceAllocator final : public c10::Allocator {
public:
    c10::DataPtr allocate(size_t bytes) override {
        const c10::DeviceIndex dev = currentDevice();
        void* ptr = nullptr;
        if (bytes != 0) MTIA_CHECK(mtiaMalloc(&ptr, bytes));
        return {ptr, ptr, &freeDeviceMemory, c10::Device(kDeviceType, dev)};
    }

    c10::DeleterFnPtr raw_deleter() const override { return &freeDeviceMemory; }

    // Storage copies (clone of a storage): device to device on the current stream, as CUDA's
    // allocator does, and waited for (PyTorch expects dest to hold the bytes on return).
    void copy_data(void* dest, const void* src, std::size_t count) const override {
        if (count == 0) return;
        MTIA_CHECK(mtiaMemcpy(dest, src, count, mtiaMemcpyDeviceToDevice));
    }
};

DeviceAllocator allocator;

void freeHostMemory(void* ptr) {
    const mtiaError_t status = mtiaFreeHost(ptr);
    if (status != mtiaSuccess) LOG(WARNING) << describeFailure(status, "mtiaFreeHost");
}

class PinnedAllocator final : public c10::Allocator {
public:
    c10::DataPtr allocate(size_t bytes) override {
        void* ptr = nullptr;
        if (bytes != 0) MTIA_CHECK(mtiaMallocHost(&ptr, bytes));
        return {ptr, ptr, &freeHostMemory, c10::Device(c10::DeviceType::CPU)};
    }

    c10::DeleterFnPtr raw_deleter() const override { return &freeHostMemory; }

    void copy_data(void* dest, const void* src, std::size_t count) const override {
        default_copy_data(dest, src, count);
    }
};

PinnedAllocator pinned;

}  // namespace

c10::Allocator* deviceAllocator() {
    return &allocator;
}

c10::Allocator* pinnedAllocator() {
    return &pinned;
}

REGISTER_ALLOCATOR(c10::DeviceType::MTIA, &allocator);

}  // namespace torch_mtia
