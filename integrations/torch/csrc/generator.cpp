#include "generator.h"

#include "mtia_check.h"
#include "streams.h"

#include <ATen/Functions.h>
#include <c10/core/GeneratorImpl.h>
#include <c10/util/Exception.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

namespace torch_mtia {
namespace {

// PyTorch's default_rng_seed_val (c10/core/GeneratorImpl.h), the seed every generator starts with.
constexpr uint64_t kDefaultSeed = 67280421310721ull;

class GeneratorImpl final : public c10::GeneratorImpl {
public:
    explicit GeneratorImpl(c10::DeviceIndex index)
        : c10::GeneratorImpl(c10::Device(kDeviceType, index),
                             c10::DispatchKeySet(c10::DispatchKey::MTIA)) {}

    void set_current_seed(uint64_t seed) override {
        seed_ = seed;
        offset_ = 0;
    }
    void set_offset(uint64_t offset) override { offset_ = offset; }
    uint64_t get_offset() const override { return offset_; }
    uint64_t current_seed() const override { return seed_; }
    // A non-deterministic seed, as the CPU's seed() draws one.
    uint64_t seed() override {
        const uint64_t s = c10::detail::getNonDeterministicRandom(/*is_cuda=*/false);
        set_current_seed(s);
        return s;
    }

    // The state is 16 bytes: the seed and the offset, little-endian uint64 each (CUDA's layout).
    void set_state(const c10::TensorImpl& state) override {
        TORCH_CHECK(state.dtype() == caffe2::TypeMeta::Make<uint8_t>() && state.device().is_cpu() &&
                        state.is_contiguous(),
                    "torch_mtia: an MTIA generator state is a contiguous CPU uint8 tensor");
        TORCH_CHECK(state.numel() == kStateBytes, "torch_mtia: an MTIA generator state has ",
                    kStateBytes, " bytes, got ", state.numel());
        const auto* bytes = static_cast<const uint8_t*>(state.data());
        std::memcpy(&seed_, bytes, 8);
        std::memcpy(&offset_, bytes + 8, 8);
    }
    c10::intrusive_ptr<c10::TensorImpl> get_state() const override {
        at::Tensor state = at::empty({kStateBytes}, at::TensorOptions().dtype(at::kByte));
        auto* bytes = state.data_ptr<uint8_t>();
        std::memcpy(bytes, &seed_, 8);
        std::memcpy(bytes + 8, &offset_, 8);
        return state.getIntrusivePtr();
    }

    static c10::DeviceType device_type() { return kDeviceType; }

private:
    static constexpr int64_t kStateBytes = 16;

    GeneratorImpl* clone_impl() const override {
        auto* copy = new GeneratorImpl(device().index());
        copy->seed_ = seed_;
        copy->offset_ = offset_;
        return copy;
    }

    uint64_t seed_ = kDefaultSeed;
    uint64_t offset_ = 0;
};

std::mutex defaultsMutex;
std::vector<at::Generator>* defaults = nullptr;  // leaked: PyTorch holds references until exit

}  // namespace

const at::Generator& defaultGenerator(c10::DeviceIndex index) {
    const c10::DeviceIndex device = resolveDevice(index);
    std::lock_guard<std::mutex> lock(defaultsMutex);
    if (defaults == nullptr) {
        int count = 0;
        MTIA_CHECK(mtiaGetDeviceCount(&count));
        defaults = new std::vector<at::Generator>();
        for (int i = 0; i < count; ++i)
            defaults->push_back(
                at::make_generator<GeneratorImpl>(static_cast<c10::DeviceIndex>(i)));
    }
    TORCH_CHECK(device >= 0 && device < static_cast<c10::DeviceIndex>(defaults->size()),
                "torch_mtia: no MTIA device ", int{device}, " (", defaults->size(), " devices)");
    return (*defaults)[device];
}

at::Generator newGenerator(c10::DeviceIndex index) {
    return at::make_generator<GeneratorImpl>(resolveDevice(index));
}

PhiloxState takePhilox(const at::Generator& generator, uint64_t increment) {
    auto* impl = at::check_generator<GeneratorImpl>(generator);  // refuses another device's
    const PhiloxState before{impl->current_seed(), impl->get_offset()};
    impl->set_offset(before.offset + ((increment + 3) / 4) * 4);
    return before;
}

}  // namespace torch_mtia
