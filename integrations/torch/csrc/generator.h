// The random number generator of an MTIA device: PyTorch's at::Generator for DeviceType::MTIA, a
// counter-based (Philox-style) state of a seed and an offset, as CUDA's generator keeps. Kernels
// that draw random numbers take (seed, offset) and advance the offset by what they consume, so a
// captured graph replays the same draws and a saved state restores them.
//
// Thread safety: as every at::Generator, callers hold the generator's mutex while they use it
// (PyTorch's own code does). Blocking: never waits for the device. Legal during graph capture. No
// errors except set_state with a state that is not one of ours (c10::Error naming the size).
#pragma once

#include <ATen/core/Generator.h>
#include <c10/core/Device.h>

#include <cstdint>

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

}  // namespace torch_mtia
