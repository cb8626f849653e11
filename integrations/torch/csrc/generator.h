// The random number generator of an MTIA device: PyTorch's at::Generator for DeviceType::MTIA, a
// counter-based (Philox-style) state of a seed and an offset, as CUDA's generator keeps. Kernels
// that draw random numbers take (seed, offset) and advance the offset by what they consume, so a
// captured graph replays the same draws and a saved state restores them.
//
// Thread safety: as every at::Generator, callers hold the generator's mutex while they use it
// (PyTorch's own code does). Blocking: never waits for the device. Legal during graph capture. No
// errors except set_state with a state that is not one of ours (c10::Error naming the size).
#pragma once

#include "../kernels/random_params.h"

#include <ATen/core/Generator.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace torch_mtia {

// The device's default generator (torch.mtia.default_generators[index]); index -1: the current
// device. Created on first use with PyTorch's default seed (67280421310721), kept for the process.
const at::Generator& defaultGenerator(c10::DeviceIndex index);

// A new generator for the device (torch.Generator(device="mtia")), seeded with the default seed.
at::Generator newGenerator(c10::DeviceIndex index);

// The seed and offset of a generator of ours, for kernels.
struct PhiloxState {
    uint64_t seed;
    uint64_t offset;
};
// Takes `increment` numbers from the generator: returns the state before and advances the offset
// (rounded up to a multiple of 4, as Philox produces four numbers per counter step). Caller holds
// the generator's mutex.
PhiloxState takePhilox(const at::Generator& generator, uint64_t increment);

// Graph safety, as CUDA graphs have it. An eager launch carries the generator's (seed, offset) and
// advances the offset. A launch captured while the current stream captures a graph that began
// through the MTIAGraph hooks carries instead the device address of a slot of that graph, {seed,
// offset} (two uint64), and its offset relative to the slot's; the capture leaves the generator's
// offset alone and counts, per generator, the numbers its launches take. Before each replay, the
// graph's prologue takes each generator's current (seed, offset) into the generator's slot with a
// small kernel launched on the replay's stream, and advances the generator's offset by the count:
// every replay draws fresh numbers, eager draws after it do not repeat them, and re-seeding before
// a replay (or a capture) reproduces the replay's numbers, which equal what the same launches would
// draw eagerly from the same state. A capture that did not begin through the hooks (no slots) has
// its random launches refused. Replays of one graph on two streams at once would race on the slots,
// as CUDA's replays race on their seed and offset tensors.
//
// The (seed, offset) of a launch that takes `numbers` 32-bit numbers from gen (none: the default
// generator of device), rounded up to a multiple of 4; takes the generator's mutex.
mtiaTorchPhilox philoxFor(const std::optional<at::Generator>& gen, c10::Device device,
                          uint64_t numbers);

// The random state of one graph: the slots and the generators its capture used.
class GraphRng {
public:
    // Allocates the slots on the current device; call before the capture begins.
    GraphRng();
    ~GraphRng();
    GraphRng(const GraphRng&) = delete;
    GraphRng& operator=(const GraphRng&) = delete;

    // Ties the live capture with this id to the graph, until endCapture.
    void beginCapture(uint64_t captureId);
    void endCapture();
    // Before each replay: writes the slots on the current stream of the graph's device and advances
    // the generators.
    void prologue();

private:
    friend mtiaTorchPhilox philoxFor(const std::optional<at::Generator>&, c10::Device, uint64_t);
    struct Use {
        at::Generator generator;
        uint64_t numbers;
    };
    c10::DeviceIndex device_;
    uint64_t* slots_ = nullptr;
    uint64_t captureId_ = 0;
    std::mutex mutex_;
    std::vector<Use> uses_;  // index i: slot i
};

}  // namespace torch_mtia
