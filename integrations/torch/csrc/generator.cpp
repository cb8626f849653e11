#include "generator.h"

#include "device_kernels.h"
#include "mtia_check.h"
#include "streams.h"

#include <ATen/Functions.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/GeneratorImpl.h>
#include <c10/util/Exception.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>
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

namespace {

// Live captures that began through the hooks, by capture id.
std::mutex capturesMutex;
std::unordered_map<uint64_t, GraphRng*>& captures() {
    static auto* map = new std::unordered_map<uint64_t, GraphRng*>();
    return *map;
}

uint64_t roundToCounter(uint64_t numbers) {
    return (numbers + 3) / 4 * 4;
}

}  // namespace

mtiaTorchPhilox philoxFor(const std::optional<at::Generator>& gen, c10::Device device,
                          uint64_t numbers) {
    at::Generator generator =
        gen.has_value() && gen->defined() ? *gen : defaultGenerator(device.index());
    auto* impl = at::check_generator<GeneratorImpl>(generator);
    const uint64_t take = roundToCounter(numbers);

    mtiaStreamCaptureStatus status = mtiaStreamCaptureStatusNone;
    uint64_t captureId = 0;
    MTIA_CHECK(
        mtiaStreamGetCaptureInfo(streamHandle(currentStream(device.index())), &status, &captureId));
    if (status == mtiaStreamCaptureStatusNone) {
        std::lock_guard<std::mutex> lock(generator.mutex());
        const uint64_t offset = impl->get_offset();
        impl->set_offset(offset + take);
        return mtiaTorchPhilox{impl->current_seed(), offset, 0};
    }

    GraphRng* graph = nullptr;
    {
        std::lock_guard<std::mutex> lock(capturesMutex);
        auto it = captures().find(captureId);
        if (it != captures().end()) graph = it->second;
    }
    TORCH_CHECK(graph != nullptr,
                "torch_mtia: a random operator was captured in a graph that did not begin through "
                "torch.mtia.MTIAGraph; its replays could not draw fresh numbers");
    std::lock_guard<std::mutex> lock(graph->mutex_);
    size_t i = 0;
    while (i < graph->uses_.size() && graph->uses_[i].generator != generator) ++i;
    if (i == graph->uses_.size()) {
        TORCH_CHECK(i < MTIA_TORCH_MAX_GRAPH_GENERATORS,
                    "torch_mtia: a graph's capture may draw from at most ",
                    MTIA_TORCH_MAX_GRAPH_GENERATORS, " generators");
        graph->uses_.push_back(GraphRng::Use{generator, 0});
    }
    const uint64_t relative = graph->uses_[i].numbers;
    graph->uses_[i].numbers += take;
    return mtiaTorchPhilox{0, relative, reinterpret_cast<uint64_t>(graph->slots_ + 2 * i)};
}

GraphRng::GraphRng() : device_(currentDevice()) {
    void* slots = nullptr;
    MTIA_CHECK(mtiaMalloc(&slots, 16 * MTIA_TORCH_MAX_GRAPH_GENERATORS));
    slots_ = static_cast<uint64_t*>(slots);
}

GraphRng::~GraphRng() {
    endCapture();
    const c10::DeviceGuard guard(c10::Device(kDeviceType, device_));
    (void)mtiaFree(slots_);  // stream-ordered; the graph was reset before
}

void GraphRng::beginCapture(uint64_t captureId) {
    std::lock_guard<std::mutex> lock(capturesMutex);
    captureId_ = captureId;
    captures()[captureId] = this;
}

void GraphRng::endCapture() {
    std::lock_guard<std::mutex> lock(capturesMutex);
    if (captureId_ != 0) captures().erase(captureId_);
    captureId_ = 0;
}

void GraphRng::prologue() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (uses_.empty()) return;
    mtiaTorchPhiloxSlots p{};
    p.slots = reinterpret_cast<uint64_t>(slots_);
    p.count = static_cast<int32_t>(uses_.size());
    for (size_t i = 0; i < uses_.size(); ++i) {
        at::Generator& g = uses_[i].generator;
        std::lock_guard<std::mutex> genLock(g.mutex());
        auto* impl = at::check_generator<GeneratorImpl>(g);
        p.values[2 * i] = impl->current_seed();
        p.values[2 * i + 1] = impl->get_offset();
        impl->set_offset(impl->get_offset() + uses_[i].numbers);
    }
    const c10::DeviceGuard guard(c10::Device(kDeviceType, device_));
    static ModuleKernel kernel("mtia_torch_philox_slots");
    kernel.launch(p, mtiaDim3{1, 1, 1});
}

}  // namespace torch_mtia
