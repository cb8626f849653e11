#include "allocator.h"

#include "mtia_check.h"
#include "streams.h"
#include "torch_version.h"

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
    // const in PyTorch 1.13; later releases drop the const (see the #if below).
#if TORCH_MTIA_ALLOCATE_IS_CONST
    c10::DataPtr allocate(size_t bytes) const override{
#else
    c10::DataPtr allocate(size_t bytes) override {
#endif
        const c10::DeviceIndex dev = currentDevice();
    void* ptr = nullptr;
    if (bytes != 0) MTIA_CHECK(mtiaMalloc(&ptr, bytes));
    return {ptr, ptr, &freeDeviceMemory, c10::Device(kDeviceType, dev)};
}

c10::DeleterFnPtr
raw_deleter() const override {
    return &freeDeviceMemory;
}
};  // namespace

DeviceAllocator allocator;

}  // namespace torch_mtia

c10::Allocator* deviceAllocator() {
    return &allocator;
}

REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &allocator);

}  // namespace torch_mtia
