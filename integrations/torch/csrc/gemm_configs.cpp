// The GEMM choice table (gemm_configs.h). Products look it up on every call, so the common case, no
// table and no override, is one relaxed atomic load.
#include "gemm_configs.h"

#include <c10/util/Exception.h>

#include <atomic>
#include <bit>
#include <map>
#include <mutex>
#include <shared_mutex>

namespace torch_mtia {
namespace {

struct GemmTable {
    std::shared_mutex mutex;
    std::map<GemmShapeClass, GemmConfig> choices;
    std::optional<GemmConfig> forced;
    // Whether choices or forced hold anything: the hot path's only read when nothing is tuned.
    std::atomic<bool> any{false};
};

GemmTable& gemmTable() {
    static GemmTable t;
    return t;
}

int gemmBucket(int64_t size) {
    return size <= 1 ? 0 : std::bit_width(static_cast<uint64_t>(size - 1));
}

const char* gemmDtypeName(c10::ScalarType dtype) {
    switch (dtype) {
    case c10::kFloat: return "float32";
    case c10::kDouble: return "float64";
    case c10::kHalf: return "float16";
    case c10::kBFloat16: return "bfloat16";
    case c10::kByte: return "uint8";
    case c10::kChar: return "int8";
    case c10::kShort: return "int16";
    case c10::kInt: return "int32";
    case c10::kLong: return "int64";
    default: return "";
    }
}

bool gemmKnownDtype(const std::string& name) {
    for (const char* n :
         {"float32", "float64", "float16", "bfloat16", "uint8", "int8", "int16", "int32", "int64"})
        if (name == n) return true;
    return false;
}

}  // namespace

void checkGemmConfig(const GemmConfig& c) {
    TORCH_CHECK(c.blocks >= 0, "gemm config: blocks must be >= 0, got ", c.blocks);
    TORCH_CHECK(c.splitCols == 0 || c.splitCols == 1,
                "gemm config: split_cols must be 0 or 1, got ", c.splitCols);
    TORCH_CHECK(c.tileM >= 0, "gemm config: tile_m must be >= 0, got ", c.tileM);
    TORCH_CHECK(c.tileN >= 0, "gemm config: tile_n must be >= 0, got ", c.tileN);
    TORCH_CHECK(c.tileK >= 0, "gemm config: tile_k must be >= 0, got ", c.tileK);
}

GemmShapeClass gemmShapeClass(c10::ScalarType dtype, int64_t m, int64_t n, int64_t k,
                              int64_t batch) {
    return {gemmDtypeName(dtype), gemmBucket(m), gemmBucket(n), gemmBucket(k), gemmBucket(batch)};
}

GemmConfig chooseGemmConfig(c10::ScalarType dtype, int64_t m, int64_t n, int64_t k, int64_t batch) {
    GemmTable& t = gemmTable();
    if (!t.any.load(std::memory_order_relaxed)) return {};
    const std::shared_lock lock(t.mutex);
    if (t.forced) return *t.forced;
    const auto it = t.choices.find(gemmShapeClass(dtype, m, n, k, batch));
    return it == t.choices.end() ? GemmConfig{} : it->second;
}

void setGemmConfigs(const std::vector<std::pair<GemmShapeClass, GemmConfig>>& entries) {
    std::map<GemmShapeClass, GemmConfig> choices;
    for (const auto& [cls, config] : entries) {
        TORCH_CHECK(gemmKnownDtype(std::get<0>(cls)), "_set_gemm_configs: unknown dtype '",
                    std::get<0>(cls), "' in a shape class");
        TORCH_CHECK(std::get<1>(cls) >= 0 && std::get<2>(cls) >= 0 && std::get<3>(cls) >= 0 &&
                        std::get<4>(cls) >= 0 && std::get<1>(cls) < 64 && std::get<2>(cls) < 64 &&
                        std::get<3>(cls) < 64 && std::get<4>(cls) < 64,
                    "_set_gemm_configs: shape class exponents must lie in [0, 64)");
        checkGemmConfig(config);
        choices[cls] = config;
    }
    GemmTable& t = gemmTable();
    const std::unique_lock lock(t.mutex);
    t.choices = std::move(choices);
    t.any.store(!t.choices.empty() || t.forced.has_value(), std::memory_order_relaxed);
}

std::vector<std::pair<GemmShapeClass, GemmConfig>> gemmConfigs() {
    GemmTable& t = gemmTable();
    const std::shared_lock lock(t.mutex);
    return {t.choices.begin(), t.choices.end()};
}

void setGemmConfigOverride(const std::optional<GemmConfig>& config) {
    if (config) checkGemmConfig(*config);
    GemmTable& t = gemmTable();
    const std::unique_lock lock(t.mutex);
    t.forced = config;
    t.any.store(!t.choices.empty() || t.forced.has_value(), std::memory_order_relaxed);
}

}  // namespace torch_mtia
