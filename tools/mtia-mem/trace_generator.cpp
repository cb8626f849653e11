#include "trace_generator.hpp"

#include "byte_size.hpp"
#include "prng.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <stdexcept>
#include <unordered_map>
#include <vector>

namespace mtia::mem {

namespace {

constexpr uint64_t kDefaultStream = 0;
constexpr uint64_t kCommStream =
    0x55d0c0a81000;            // a stream handle as PyTorch records it: any non-zero number
constexpr uint64_t kHalf = 2;  // bytes per fp16 element
constexpr uint64_t kFloat = 4;
constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr double kBudgetShare = 0.70;  // of the budget a workload may have allocated at its peak

// Writes the trace and keeps what a check of the budget needs.
class Tracer {
public:
    explicit Tracer(uint64_t seed) : rng(seed) {}

    uint64_t alloc(uint64_t bytes, uint64_t stream = kDefaultStream) {
        const uint64_t addr = nextAddr_;
        nextAddr_ +=
            (bytes + 511) / 512 * 512;  // identities only: a replay maps them to its own pointers
        live_.emplace(addr, Live{bytes, stream});
        liveBytes_ += bytes;
        peak_ = std::max(peak_, liveBytes_);
        emit(Action::Alloc, addr, bytes, stream);
        return addr;
    }
    // The free completes at once: nothing else used the block.
    void free(uint64_t addr) { release(addr, 0); }
    // Another stream still uses the block: the allocator completes the free after `later` more
    // entries.
    void freeAfter(uint64_t addr, int later) { release(addr, later); }
    // A small tensor that lives briefly: a norm's statistics, a scalar, an index list.
    void smallTemporary() {
        static constexpr uint64_t kSizes[] = {4,    8,    512,   2048,  4096,
                                              6144, 8192, 16384, 65536, 262144};
        free(alloc(kSizes[rng.uniform(0, std::size(kSizes) - 1)]));
    }

    uint64_t peak() const { return peak_; }
    std::vector<TraceEntry> take() {
        while (!pending_.empty()) completeFirst();
        return std::move(trace_);
    }

    Prng rng;

private:
    struct Live {
        uint64_t bytes, stream;
    };
    struct Pending {
        uint64_t addr, bytes, stream;
        size_t at;  // trace length at which the free completes
    };

    void release(uint64_t addr, int later) {
        auto it = live_.find(addr);
        if (it == live_.end())
            throw std::logic_error("trace generator: free of a block that is not live");
        const Live l = it->second;
        live_.erase(it);
        emit(Action::FreeRequested, addr, l.bytes, l.stream);
        if (later == 0) return complete({addr, l.bytes, l.stream, 0});
        pending_.push_back({addr, l.bytes, l.stream, trace_.size() + static_cast<size_t>(later)});
    }
    void completeFirst() {
        const Pending p = pending_.front();
        pending_.pop_front();
        complete(p);
    }
    void complete(const Pending& p) {
        liveBytes_ -= p.bytes;
        emit(Action::FreeCompleted, p.addr, p.bytes, p.stream);
    }
    void emit(Action a, uint64_t addr, uint64_t bytes, uint64_t stream) {
        clockUs_ += 1 + rng.uniform(0, 20);
        trace_.push_back({a, 0, addr, bytes, stream, static_cast<double>(clockUs_), 0});
        while (!pending_.empty() && pending_.front().at <= trace_.size()) completeFirst();
    }

    std::vector<TraceEntry> trace_;
    std::unordered_map<uint64_t, Live> live_;
    std::deque<Pending> pending_;
    uint64_t liveBytes_ = 0;
    uint64_t peak_ = 0;
    uint64_t nextAddr_ = 0x7f3a00000000;
    uint64_t clockUs_ = 1'750'000'000'000'000;  // epoch microseconds, as PyTorch records them
};

struct Model {
    const char* name;
    uint64_t layers, hidden, vocab;
    uint64_t params() const {
        return 12 * layers * hidden * hidden + vocab * hidden + 2048 * hidden;
    }
};

constexpr Model kTrainModels[] = {
    {"gpt-125m", 12, 768, 50304},
    {"gpt-350m", 24, 1024, 50304},
    {"gpt-760m", 24, 1536, 50304},
    {"gpt-1.3b", 24, 2048, 50304},
};
constexpr uint64_t kTrainBatches[] = {1, 2, 4, 8, 16};

constexpr Model kServeModels[] = {
    {"opt-350m", 24, 1024, 50272},
    {"opt-1.3b", 24, 2048, 50272},
    {"opt-2.7b", 32, 2560, 50272},
    {"opt-6.7b", 32, 4096, 50272},
};

struct TrainConfig {
    Model model;
    uint64_t batch;
    bool varlen;
    bool longest;  // every step at the longest length: the budget check's worst case
};

void train(Tracer& t, const TrainConfig& c, int steps) {
    const Model& m = c.model;
    const uint64_t h = m.hidden;
    const uint64_t heads = h / 64;
    // One layer's parameters: QKV, output projection, MLP up and down (matrices), then their biases
    // and the two norms' weights and biases.
    const uint64_t matrices[] = {3 * h * h, h * h, 4 * h * h, 4 * h * h};
    const uint64_t vectors[] = {3 * h, h, 4 * h, h, h, h, h, h};
    // fp32 parameters (automatic mixed precision keeps the masters in fp32).
    std::vector<uint64_t> paramSizes = {m.vocab * h, 2048 * h};
    for (uint64_t l = 0; l < m.layers; ++l) {
        for (uint64_t n : matrices) paramSizes.push_back(n);
        for (uint64_t n : vectors) paramSizes.push_back(n);
    }
    paramSizes.push_back(h);  // final norm
    paramSizes.push_back(h);
    std::vector<uint64_t> params;
    for (uint64_t n : paramSizes) params.push_back(t.alloc(n * kFloat));
    std::vector<uint64_t> optimizer;

    for (int step = 0; step < steps; ++step) {
        const uint64_t seq = !c.varlen ? 1024 : c.longest ? 2048 : t.rng.uniform(4, 32) * 64;
        const uint64_t tokens = c.batch * seq;
        const uint64_t act = tokens * h * kHalf;
        const uint64_t ids = t.alloc(tokens * 8);
        const uint64_t labels = t.alloc(tokens * 8);
        const uint64_t embedCast =
            t.alloc(m.vocab * h * kHalf);  // tied embedding, cast once per step
        uint64_t x = t.alloc(act);

        // Forward: what each layer keeps for backward.
        struct Saved {
            std::vector<uint64_t> casts, acts;
        };
        std::vector<Saved> saved(m.layers);
        for (uint64_t l = 0; l < m.layers; ++l) {
            Saved& s = saved[l];
            for (uint64_t n : matrices) s.casts.push_back(t.alloc(n * kHalf));
            s.acts.push_back(t.alloc(act));                             // 0: norm 1 output
            s.acts.push_back(t.alloc(tokens * 2 * kFloat));             // 1: its mean and rstd
            s.acts.push_back(t.alloc(3 * act));                         // 2: QKV
            s.acts.push_back(t.alloc(act));                             // 3: attention output
            s.acts.push_back(t.alloc(c.batch * heads * seq * kFloat));  // 4: log-sum-exp
            if (t.rng.chance(0.5))
                t.free(t.alloc(t.rng.uniform(1, 32) * kMiB));  // a GEMM workspace
            s.acts.push_back(t.alloc(act));                    // 5: projection + residual
            s.acts.push_back(t.alloc(act));                    // 6: norm 2 output
            s.acts.push_back(t.alloc(tokens * 2 * kFloat));    // 7: its statistics
            s.acts.push_back(t.alloc(4 * act));                // 8: MLP hidden
            s.acts.push_back(t.alloc(4 * act));                // 9: activation
            for (int k = 0; k < 2; ++k) t.smallTemporary();
            const uint64_t out = t.alloc(act);  // MLP output + residual: the next layer's input
            s.acts.push_back(x);  // 10: the layer's input, kept for the residual branch
            x = out;
        }
        const uint64_t normed = t.alloc(act);
        const uint64_t logits = t.alloc(tokens * m.vocab * kHalf);
        const uint64_t logitsFp32 = t.alloc(tokens * m.vocab * kFloat);  // cross-entropy in fp32
        const uint64_t loss = t.alloc(kFloat);
        t.smallTemporary();

        // Backward.
        uint64_t grad = t.alloc(tokens * m.vocab * kFloat);
        t.free(logitsFp32);
        const uint64_t gradHalf = t.alloc(tokens * m.vocab * kHalf);
        t.free(grad);
        t.free(logits);
        grad = t.alloc(act);
        t.free(gradHalf);
        t.free(normed);
        t.free(x);
        std::vector<uint64_t> grads;
        grads.push_back(t.alloc(m.vocab * h * kFloat));
        grads.push_back(t.alloc(2048 * h * kFloat));
        std::vector<uint64_t> buckets;
        uint64_t bucketFill = 0;
        for (uint64_t l = m.layers; l-- > 0;) {
            Saved& s = saved[l];
            const uint64_t gHidden = t.alloc(4 * act);
            t.free(s.acts[9]);
            t.free(s.acts[8]);
            for (size_t k = 0; k < std::size(matrices); ++k)
                grads.push_back(t.alloc(matrices[k] * kFloat));
            for (uint64_t n : vectors) grads.push_back(t.alloc(n * kFloat));
            const uint64_t gQkv = t.alloc(3 * act);
            t.free(gHidden);
            t.free(s.acts[7]);
            t.free(s.acts[6]);
            t.free(s.acts[5]);
            if (t.rng.chance(0.5)) t.free(t.alloc(t.rng.uniform(1, 32) * kMiB));
            t.free(s.acts[4]);
            t.free(s.acts[3]);
            t.free(s.acts[2]);
            t.smallTemporary();
            const uint64_t next = t.alloc(act);
            t.free(gQkv);
            t.free(s.acts[1]);
            t.free(s.acts[0]);
            t.free(s.acts[10]);
            for (uint64_t cast : s.casts) t.free(cast);
            t.free(grad);
            grad = next;
            // Gradients are reduced in 25 MiB buckets on the communication stream as they fill.
            bucketFill += 12 * h * h * kFloat;
            while (bucketFill >= 25 * kMiB) {
                bucketFill -= 25 * kMiB;
                buckets.push_back(t.alloc(25 * kMiB, kCommStream));
                if (buckets.size() > 2) {
                    t.freeAfter(buckets.front(), static_cast<int>(t.rng.uniform(4, 40)));
                    buckets.erase(buckets.begin());
                }
            }
        }
        for (uint64_t b : buckets) t.freeAfter(b, static_cast<int>(t.rng.uniform(4, 40)));
        t.free(grad);
        t.free(embedCast);
        t.free(loss);
        t.free(labels);
        t.free(ids);

        // Adam: states at the first step, foreach temporaries in chunks of tensors; then zero_grad
        // frees the gradients (set_to_none).
        if (optimizer.empty())
            for (uint64_t n : paramSizes)
                for (int k = 0; k < 2; ++k) optimizer.push_back(t.alloc(n * kFloat));
        for (size_t first = 0; first < paramSizes.size(); first += 16) {
            std::vector<uint64_t> temps;
            for (size_t i = first; i < std::min(first + 16, paramSizes.size()); ++i)
                temps.push_back(t.alloc(paramSizes[i] * kFloat));
            for (uint64_t tmp : temps) t.free(tmp);
        }
        t.smallTemporary();
        for (uint64_t g : grads) t.free(g);
    }
    for (uint64_t s : optimizer) t.free(s);
    for (uint64_t p : params) t.free(p);
}

struct ServeConfig {
    Model model;
    uint64_t kvBudget;  // bytes the caches may take, worst case of every admitted request
};

void serve(Tracer& t, const ServeConfig& c, int steps) {
    const Model& m = c.model;
    const uint64_t h = m.hidden;
    const uint64_t block = 16;                               // tokens a cache grows by
    const uint64_t perLayerToken = h * kHalf;                // one of K or V, one layer, one token
    const uint64_t perToken = 2 * m.layers * perLayerToken;  // every layer's K and V
    std::vector<uint64_t> weights = {t.alloc(m.vocab * h * kHalf), t.alloc(2048 * h * kHalf)};
    for (uint64_t l = 0; l < m.layers; ++l)
        for (uint64_t n : {3 * h * h, h * h, 4 * h * h, 4 * h * h, 3 * h, h, 4 * h, h, h, h, h, h})
            weights.push_back(t.alloc(n * kHalf));

    struct Request {
        uint64_t prompt, remaining, tokens, capacity;
        uint64_t reservation;          // worst-case cache bytes, held from admission to the end
        std::vector<uint64_t> caches;  // K and V of each layer
    };
    std::deque<Request> waiting;
    std::vector<Request> running;
    uint64_t reserved = 0;  // worst-case cache bytes of the running requests
    auto retire = [&](Request& r) {
        for (uint64_t cache : r.caches) t.free(cache);
        reserved -= r.reservation;
    };

    for (int step = 0; step < steps; ++step) {
        if (t.rng.chance(0.35)) {
            Request r{t.rng.uniform(32, 1024), t.rng.uniform(16, 512), 0, 0, 0, {}};
            r.reservation = ((r.prompt + r.remaining) / block + 1) * block * perToken;
            waiting.push_back(std::move(r));
        }
        // Admission: first come, first served, while the worst case fits.
        while (!waiting.empty() && running.size() < 64 &&
               reserved + waiting.front().reservation <= c.kvBudget) {
            Request r = std::move(waiting.front());
            waiting.pop_front();
            reserved += r.reservation;
            r.tokens = r.prompt;
            r.capacity = (r.prompt + block - 1) / block * block;
            uint64_t x = t.alloc(r.prompt * h * kHalf);
            for (uint64_t l = 0; l < m.layers; ++l) {  // prefill, layer by layer
                const uint64_t qkv = t.alloc(3 * r.prompt * h * kHalf);
                r.caches.push_back(t.alloc(r.capacity * perLayerToken));
                r.caches.push_back(t.alloc(r.capacity * perLayerToken));
                t.free(qkv);
                const uint64_t mlp = t.alloc(4 * r.prompt * h * kHalf);
                const uint64_t out = t.alloc(r.prompt * h * kHalf);
                t.free(mlp);
                t.free(x);
                x = out;
            }
            t.free(x);
            running.push_back(std::move(r));
        }
        if (running.empty()) continue;

        // One decode step for the whole batch.
        const uint64_t batch = running.size();
        uint64_t x = t.alloc(batch * h * kHalf);
        for (uint64_t l = 0; l < m.layers; ++l) {
            const uint64_t qkv = t.alloc(batch * 3 * h * kHalf);
            const uint64_t mlp = t.alloc(batch * 4 * h * kHalf);
            t.free(qkv);
            const uint64_t out = t.alloc(batch * h * kHalf);
            t.free(mlp);
            t.free(x);
            x = out;
        }
        const uint64_t logits = t.alloc(batch * m.vocab * kHalf);
        t.free(x);
        const uint64_t probs = t.alloc(batch * m.vocab * kFloat);  // sampling in fp32
        t.free(logits);
        t.smallTemporary();
        t.free(probs);
        for (Request& r : running) {
            ++r.tokens;
            --r.remaining;
            if (r.tokens > r.capacity) {  // full: every layer's K and V become a block larger
                r.capacity += block;
                for (uint64_t& cache : r.caches) {
                    const uint64_t bigger = t.alloc(r.capacity * perLayerToken);
                    t.free(cache);
                    cache = bigger;
                }
            }
        }
        for (auto it = running.begin(); it != running.end();) {
            if (it->remaining == 0) {
                retire(*it);
                it = running.erase(it);
            } else {
                ++it;
            }
        }
    }
    for (Request& r : running) retire(r);
    for (uint64_t w : weights) t.free(w);
}

std::string count(uint64_t n) {
    return n >= 1'000'000'000 ? fmt::format("{:.1f}B", n / 1e9)
                              : fmt::format("{}M", (n + 500'000) / 1'000'000);
}

GeneratedTrace trainTrace(const GenerateOptions& o, bool varlen) {
    const int steps = o.steps > 0 ? o.steps : 6;
    const auto limit = static_cast<uint64_t>(kBudgetShare * static_cast<double>(o.budgetBytes));
    // The largest configuration that fits: dry runs of two steps (the second has the optimizer's
    // states and is like every later one) at the longest sequence length.
    const TrainConfig* best = nullptr;
    uint64_t bestPeak = 0, smallestPeak = UINT64_MAX;
    std::vector<TrainConfig> configs;
    for (const Model& m : kTrainModels)
        for (uint64_t b : kTrainBatches) configs.push_back({m, b, varlen, true});
    for (const TrainConfig& c : configs) {
        Tracer dry(o.seed);
        train(dry, c, 2);
        smallestPeak = std::min(smallestPeak, dry.peak());
        if (dry.peak() <= limit && dry.peak() > bestPeak) {
            best = &c;
            bestPeak = dry.peak();
        }
    }
    if (best == nullptr)
        throw std::invalid_argument(
            fmt::format("--device-memory-budget {}: the smallest training run ({}, batch 1) peaks "
                        "at {}, more than {:.0f}% of "
                        "the budget",
                        formatBytes(o.budgetBytes), kTrainModels[0].name, formatBytes(smallestPeak),
                        kBudgetShare * 100));
    TrainConfig c = *best;
    c.longest = false;
    Tracer t(o.seed);
    train(t, c, steps);
    GeneratedTrace g;
    g.peakBytes = t.peak();
    g.model = fmt::format(
        "{} ({} parameters), batch {}, {} tokens, mixed precision with Adam, {} steps",
        c.model.name, count(c.model.params()), c.batch, varlen ? "256 to 2048" : "1024", steps);
    g.snapshot.deviceTraces.push_back(t.take());
    return g;
}

GeneratedTrace serveTrace(const GenerateOptions& o) {
    const int steps = o.steps > 0 ? o.steps : 400;
    const auto limit = static_cast<uint64_t>(kBudgetShare * static_cast<double>(o.budgetBytes));
    // The largest model whose fp16 weights take at most 40% of the budget; the caches get the rest
    // of the share, less room for the activations of a prefill.
    const Model* model = nullptr;
    for (const Model& m : kServeModels)
        if (m.params() * kHalf <= o.budgetBytes * 2 / 5) model = &m;
    if (model == nullptr)
        throw std::invalid_argument(
            fmt::format("--device-memory-budget {}: the smallest served model ({}) needs {} "
                        "for its weights, more than 40% of the budget",
                        formatBytes(o.budgetBytes), kServeModels[0].name,
                        formatBytes(kServeModels[0].params() * kHalf)));
    const uint64_t weights = model->params() * kHalf;
    const uint64_t activations = 1024 * 9 * model->hidden * kHalf + 64 * model->vocab * 6;
    const uint64_t cacheToken = 2 * model->layers * model->hidden * kHalf;
    const uint64_t kvBudget = limit > weights + activations ? limit - weights - activations : 0;
    if (kvBudget < 2048 * cacheToken)
        throw std::invalid_argument(
            fmt::format("--device-memory-budget {}: no room for the KV cache of one request",
                        formatBytes(o.budgetBytes)));
    Tracer t(o.seed);
    serve(t, {*model, kvBudget}, steps);
    GeneratedTrace g;
    g.peakBytes = t.peak();
    g.model = fmt::format(
        "{} ({} parameters) serving, KV caches growing by 16 tokens within {}, {} decode steps",
        model->name, count(model->params()), formatBytes(kvBudget), steps);
    g.snapshot.deviceTraces.push_back(t.take());
    return g;
}

}  // namespace

bool workloadFromName(const std::string& name, Workload& out) {
    if (name == "train")
        out = Workload::Train;
    else if (name == "train-varlen")
        out = Workload::TrainVarlen;
    else if (name == "kv-cache")
        out = Workload::KvCache;
    else
        return false;
    return true;
}

GeneratedTrace generate(const GenerateOptions& options) {
    switch (options.workload) {
    case Workload::Train: return trainTrace(options, false);
    case Workload::TrainVarlen: return trainTrace(options, true);
    case Workload::KvCache: return serveTrace(options);
    }
    throw std::invalid_argument("unknown workload");
}

}  // namespace mtia::mem
