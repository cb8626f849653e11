#include "trace_generator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <random>
#include <vector>

namespace mtia::mem {

namespace {

constexpr uint64_t kSideStream = 0x5a5a1000;  // the gradient-bucket stream's number in the trace
constexpr uint64_t kHalf = 2;                 // bytes per fp16 element

class Tracer {
 public:
  explicit Tracer(uint64_t seed) : rng_(seed) {}

  uint64_t alloc(uint64_t bytes, uint64_t stream = 0) {
    const uint64_t addr = nextAddr_;
    nextAddr_ += (bytes + 511) / 512 * 512 + 512;  // identities only: the replay maps them to its own
    trace_.push_back({Action::Alloc, addr, bytes, stream, now()});
    sizes_.push_back({addr, bytes, stream});
    return addr;
  }
  void free(uint64_t addr) {
    auto it = std::find_if(sizes_.rbegin(), sizes_.rend(), [&](const Live& l) { return l.addr == addr; });
    if (it == sizes_.rend()) return;
    trace_.push_back({Action::FreeRequested, addr, it->bytes, it->stream, now()});
    trace_.push_back({Action::FreeCompleted, addr, it->bytes, it->stream, now()});
    sizes_.erase(std::next(it).base());
  }
  uint64_t uniform(uint64_t lo, uint64_t hi) { return std::uniform_int_distribution<uint64_t>(lo, hi)(rng_); }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  // A small tensor: a bias, a norm's statistics, a scalar loss or step counter.
  uint64_t smallTensor() {
    static constexpr uint64_t kSizes[] = {4, 8, 256, 2048, 4096, 6144, 8192, 16384, 65536};
    return alloc(kSizes[uniform(0, std::size(kSizes) - 1)]);
  }
  std::vector<TraceEntry> take() { return std::move(trace_); }

 private:
  struct Live {
    uint64_t addr, bytes, stream;
  };
  double now() { return clock_ += 1.0 + static_cast<double>(uniform(0, 20)); }

  std::mt19937_64 rng_;
  std::vector<TraceEntry> trace_;
  std::vector<Live> sizes_;
  uint64_t nextAddr_ = 0x7f0000000000;
  double clock_ = 1.7e15;
};

struct Model {
  uint64_t layers, hidden, heads, vocab, batch;
};

void train(Tracer& t, const GenerateOptions& o, bool varlen) {
  const Model m{16, 1536, 12, 32000, 4};
  const uint64_t h = m.hidden;
  // Parameters of each layer: QKV, output projection, MLP up and down, two norms and biases.
  const uint64_t layerShapes[] = {3 * h * h, h * h, 4 * h * h, 4 * h * h, h, h, 3 * h, h, 4 * h, h};
  std::vector<uint64_t> params;
  params.push_back(t.alloc(m.vocab * h * kHalf));  // embedding
  for (uint64_t l = 0; l < m.layers; ++l)
    for (uint64_t n : layerShapes) params.push_back(t.alloc(n * kHalf));
  std::vector<uint64_t> grads, optimizer;
  const int steps = o.steps > 0 ? o.steps : 6;
  for (int step = 0; step < steps; ++step) {
    const uint64_t seq = varlen ? t.uniform(4, 32) * 64 : 1024;  // 256..2048 tokens, or 1024
    const uint64_t tokens = m.batch * seq;
    const uint64_t act = tokens * h * kHalf;
    std::vector<std::vector<uint64_t>> saved(m.layers);
    uint64_t x = t.alloc(act);  // embedded input
    for (uint64_t l = 0; l < m.layers; ++l) {
      auto& keep = saved[l];
      keep.push_back(t.alloc(act));                                 // norm output
      keep.push_back(t.alloc(3 * act));                             // QKV
      keep.push_back(t.alloc(m.batch * m.heads * seq * 4));         // softmax statistics (fp32)
      keep.push_back(t.alloc(act));                                 // attention output
      if (t.chance(0.5)) t.free(t.alloc(t.uniform(1, 32) << 20));  // a GEMM workspace
      keep.push_back(t.alloc(act));                                 // projection + residual
      keep.push_back(t.alloc(4 * act));                             // MLP hidden
      keep.push_back(t.alloc(4 * act));                             // activation
      for (int s = 0; s < 3; ++s) t.free(t.smallTensor());
      keep.push_back(t.alloc(act));  // MLP output + residual
    }
    const uint64_t logits = t.alloc(tokens * m.vocab * kHalf);
    const uint64_t loss = t.alloc(4);
    t.free(x);
    // Backward, last layer first.
    uint64_t grad = t.alloc(act);
    t.free(logits);
    const bool firstBackward = grads.empty();
    std::vector<uint64_t> bucket;
    for (uint64_t l = m.layers; l-- > 0;) {
      const uint64_t g4 = t.alloc(4 * act);  // gradient of the MLP hidden
      t.free(saved[l][6]);
      t.free(saved[l][5]);
      if (firstBackward)
        for (size_t k = 0; k < std::size(layerShapes); ++k) grads.push_back(t.alloc(layerShapes[k] * kHalf));
      const uint64_t gqkv = t.alloc(3 * act);
      t.free(g4);
      for (int s = 0; s < 2; ++s) t.free(t.smallTensor());
      t.free(saved[l][4]);
      t.free(saved[l][3]);
      t.free(saved[l][2]);
      t.free(saved[l][1]);
      const uint64_t next = t.alloc(act);
      t.free(gqkv);
      t.free(saved[l][0]);
      t.free(saved[l][7]);
      t.free(grad);
      grad = next;
      if (l % 4 == 0) {  // a 25 MiB gradient bucket reduced on the side stream
        bucket.push_back(t.alloc(25ull << 20, kSideStream));
        if (bucket.size() > 2) {
          t.free(bucket.front());
          bucket.erase(bucket.begin());
        }
      }
    }
    for (uint64_t b : bucket) t.free(b);
    t.free(grad);
    t.free(loss);
    // Optimizer: two fp32 states per parameter, created at the first step; temporaries per tensor.
    if (optimizer.empty())
      for (uint64_t n : layerShapes)
        for (uint64_t l = 0; l < m.layers; ++l)
          for (int s = 0; s < 2; ++s) optimizer.push_back(t.alloc(n * 4));
    for (int k = 0; k < 8; ++k) t.free(t.alloc(t.uniform(1, 3) * 4 * h * h * 4));
  }
  for (uint64_t p : optimizer) t.free(p);
  for (uint64_t g : grads) t.free(g);
  for (uint64_t p : params) t.free(p);
}

void kvCache(Tracer& t, const GenerateOptions& o) {
  const Model m{24, 2048, 16, 32000, 1};
  const uint64_t h = m.hidden;
  std::vector<uint64_t> params;
  params.push_back(t.alloc(m.vocab * h * kHalf));
  for (uint64_t l = 0; l < m.layers; ++l)
    for (uint64_t n : {3 * h * h, h * h, 4 * h * h, 4 * h * h}) params.push_back(t.alloc(n * kHalf));
  struct Request {
    uint64_t tokens, remaining, cache;
  };
  const uint64_t perToken = 2 * m.layers * h * kHalf;  // keys and values of every layer
  const uint64_t block = 16;                          // tokens the cache grows by
  std::vector<Request> running;
  const int steps = o.steps > 0 ? o.steps : 400;
  for (int step = 0; step < steps; ++step) {
    if (running.size() < 24 && t.chance(0.35)) {  // a request arrives: prefill its prompt
      const uint64_t prompt = t.uniform(32, 1024);
      const uint64_t act = t.alloc(prompt * 4 * h * kHalf);
      const uint64_t cap = (prompt + block - 1) / block * block;
      running.push_back({prompt, t.uniform(16, 512), t.alloc(cap * perToken)});
      t.free(act);
    }
    // One decode step for every running request.
    const uint64_t batch = running.size();
    if (batch == 0) continue;
    const uint64_t hidden = t.alloc(batch * h * kHalf);
    for (Request& r : running) {
      ++r.tokens;
      --r.remaining;
      if (r.tokens % block == 0) {  // the cache is full: a block larger, copy, free the old one
        const uint64_t bigger = t.alloc((r.tokens + block) * perToken);
        t.free(r.cache);
        r.cache = bigger;
      }
    }
    const uint64_t logits = t.alloc(batch * m.vocab * kHalf);
    t.free(t.smallTensor());
    t.free(logits);
    t.free(hidden);
    for (auto it = running.begin(); it != running.end();) {
      if (it->remaining == 0) {
        t.free(it->cache);
        it = running.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (Request& r : running) t.free(r.cache);
  for (uint64_t p : params) t.free(p);
}

}  // namespace

bool workloadFromName(const std::string& name, Workload& out) {
  if (name == "train") out = Workload::Train;
  else if (name == "train-varlen") out = Workload::TrainVarlen;
  else if (name == "kv-cache") out = Workload::KvCache;
  else return false;
  return true;
}

Snapshot generate(const GenerateOptions& options) {
  Tracer t(options.seed);
  switch (options.workload) {
    case Workload::Train: train(t, options, false); break;
    case Workload::TrainVarlen: train(t, options, true); break;
    case Workload::KvCache: kvCache(t, options); break;
  }
  Snapshot snap;
  snap.deviceTraces.push_back(t.take());
  return snap;
}

void writeJson(const Snapshot& snap, std::ostream& out) {
  out << "{\"segments\": [], \"device_traces\": [";
  for (size_t d = 0; d < snap.deviceTraces.size(); ++d) {
    out << (d ? ", [" : "[");
    const auto& entries = snap.deviceTraces[d];
    for (size_t i = 0; i < entries.size(); ++i) {
      const TraceEntry& e = entries[i];
      out << fmt::format("{}{{\"action\": \"{}\", \"addr\": {}, \"size\": {}, \"stream\": {}, \"time_us\": {:.0f}, "
                         "\"frames\": []}}",
                         i ? ",\n" : "\n", actionName(e.action), e.addr, e.size, e.stream, e.timeUs);
    }
    out << "]";
  }
  out << "], \"allocator_settings\": {}, \"external_annotations\": []}\n";
}

}  // namespace mtia::mem
