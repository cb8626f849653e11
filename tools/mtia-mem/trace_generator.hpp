// Synthetic but realistic allocator traces, for tests and the fragmentation
// benchmark, in the shape of a PyTorch 2.x snapshot:
// - train: transformer training at a fixed sequence length. Parameters,
//   gradients and two optimizer states stay; each step allocates the
//   activations of every layer in forward (kept for backward), frees them in
//   reverse in backward while gradient temporaries come and go, with cuBLAS-
//   like workspaces and small tensors (biases, norms, scalars) throughout and
//   gradient buckets on a second stream;
// - train-varlen: the same with a new sequence length every step, the case
//   that fragments a caching allocator;
// - kv-cache: inference with requests arriving and finishing; each request's
//   KV cache grows by re-allocating it a block larger and freeing the old one,
//   next to per-token activations.
// Sizes come from the model's shapes (fp16); every number is drawn from a
// seeded generator, so a seed always gives the same trace.
#pragma once

#include "snapshot.hpp"

#include <cstdint>
#include <ostream>
#include <string>

namespace mtia::mem {

enum class Workload { Train, TrainVarlen, KvCache };

struct GenerateOptions {
  Workload workload = Workload::Train;
  int steps = 0;  // 0: the workload's default (train: 6 steps, kv-cache: 400 decode steps)
  uint64_t seed = 1;
};

// "train", "train-varlen", "kv-cache"; false for anything else.
bool workloadFromName(const std::string& name, Workload& out);
Snapshot generate(const GenerateOptions& options);
// The PyTorch 2.x snapshot dict as JSON: no segments, one trace list per device.
void writeJson(const Snapshot& snap, std::ostream& out);

}  // namespace mtia::mem
