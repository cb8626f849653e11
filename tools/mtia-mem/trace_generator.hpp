// Synthetic but realistic allocator traces in the shape of a PyTorch 2.x
// snapshot, for tests and the fragmentation benchmark. Three workloads:
//
// - train: GPT-style transformer training at a fixed sequence length (1024)
//   with automatic mixed precision and Adam, as PyTorch 2.x runs it:
//   fp32 parameters allocated once; each step's forward casts every weight to
//   fp16 and keeps, per layer, the activations backward needs (norm outputs,
//   QKV, attention output and its log-sum-exp, MLP hidden and activation),
//   with small temporaries (norm statistics, scalars) and cuBLAS-like
//   workspaces of assorted sizes coming and going; the loss upcasts the logits
//   to fp32. Backward walks the layers in reverse: activation gradients come
//   and go, saved activations and weight casts are freed, and each layer's
//   fp32 parameter gradients are allocated (zero_grad(set_to_none=True), the
//   2.x default, freed them after the previous step) while 25 MiB gradient
//   buckets are reduced on a second stream (their frees complete only after
//   later work, as with record_stream). The optimizer creates its two fp32
//   states at the first step, then, per step, foreach temporaries in chunks.
// - train-varlen: the same with a new sequence length every step (256 to
//   2048 in steps of 64), the case that fragments a caching allocator.
// - kv-cache: fp16 inference serving. Requests arrive at random (prompt 32 to
//   1024 tokens, 16 to 512 new ones), are admitted while their worst-case
//   cache fits the memory left after the weights (as serving engines admit),
//   prefill per layer, then decode one token per step; each request keeps a
//   K and a V cache per layer that grows by re-allocating it 16 tokens larger
//   (torch.cat) and freeing the old one. Finished requests free their caches.
//
// The model size and batch follow the device memory budget: the largest
// configuration whose peak allocated bytes stay within 70% of the budget, so
// that fragmentation has room to show (16 GiB: a 355M-parameter model at batch
// 4, or batch 2 with varying lengths; a 2.7B-parameter model serving). Sizes
// come from the model's shapes: many tensors below 1 MiB (biases, norms,
// statistics, decode activations), many of 1-10 MiB (weight casts, per-layer
// caches) and the large ones above 10 MiB (activations, logits, embeddings).
// Every choice is drawn from a seeded generator of our own (prng.hpp): a seed
// gives the same trace everywhere.
#pragma once

#include "allocator/snapshot/model.hpp"

#include <cstdint>
#include <string>

namespace mtia::mem {

enum class Workload { Train, TrainVarlen, KvCache };

struct GenerateOptions {
    Workload workload = Workload::Train;
    int steps = 0;  // 0: the workload's default (training: 6 steps; kv-cache: 400 decode steps)
    uint64_t seed = 1;
    uint64_t budgetBytes = uint64_t{16} << 30;  // device memory the trace is sized for
};

struct GeneratedTrace {
    Snapshot snapshot;       // one device, no segments
    std::string model;       // what was modelled, for the user
    uint64_t peakBytes = 0;  // peak of the requested bytes live at once
};

// "train", "train-varlen", "kv-cache"; false for anything else.
bool workloadFromName(const std::string& name, Workload& out);
// Throws std::invalid_argument when even the smallest model does not fit the budget.
GeneratedTrace generate(const GenerateOptions& options);

}  // namespace mtia::mem
