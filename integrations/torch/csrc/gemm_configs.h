// How the device GEMM (kernels/matrix_kernels.cpp) cuts a product, and which cut each shape class
// uses. torch_mtia.gemm_tuning measures the candidates with the tuning pool and installs the
// winners here (from its disk cache, once the device is initialised); every product looks its class
// up.
#pragma once

#include "../kernels/matrix_params.h"

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace torch_mtia {

// A configuration: the launch's block count (0: the default rule of ops_matrix.cpp) and
// mtiaTorchGemm's splitCols/tileM/tileN/tileK. All zero is the default, today's behaviour.
struct GemmConfig {
    int32_t blocks = 0, splitCols = 0, tileM = 0, tileN = 0, tileK = 0;
    bool operator==(const GemmConfig&) const = default;
};

// A shape class: the dtype and, for m, n, k and batch, the exponent of the smallest power of two at
// least that size (0 for sizes 0 and 1; 512 -> 9, 513..1024 -> 10). A product of m x k by k x n
// (batch of them) belongs to exactly one class.
using GemmShapeClass = std::tuple<std::string, int, int, int, int>;

GemmShapeClass gemmShapeClass(c10::ScalarType dtype, int64_t m, int64_t n, int64_t k,
                              int64_t batch);

// The configuration for a product: the forced one if set, else the installed choice of its class,
// else the default. Thread safety: any thread; a lookup takes a shared lock only when a table is
// installed. Non-blocking.
GemmConfig chooseGemmConfig(c10::ScalarType dtype, int64_t m, int64_t n, int64_t k, int64_t batch);

// Replaces the choice table (classes must name a dtype the device multiplies; throws c10::Error
// naming the entry otherwise). Thread safety: any thread; products already planned keep theirs.
void setGemmConfigs(const std::vector<std::pair<GemmShapeClass, GemmConfig>>& entries);
std::vector<std::pair<GemmShapeClass, GemmConfig>> gemmConfigs();

// Forces one configuration on every product (the tests' way to run each candidate through the
// operators); nullopt returns to the table. Thread safety: any thread.
void setGemmConfigOverride(const std::optional<GemmConfig>& config);

// Checks a configuration's fields (throws c10::Error naming the field: negative values).
void checkGemmConfig(const GemmConfig& config);

// The kernel argument (mtiaTorchGemm's bytes) and grid with which torch.mm (a, b: matrices) or
// torch.bmm (batches) computes out = a @ b on the current device under config, for the tuning
// pool: pointerOffsets are the byte offsets of the operands' device pointers (a, b, out) in bytes.
// Throws c10::Error when the operators would not launch these operands as they are (no unit
// stride, an overlapping or strided out, empty operands, mismatched sizes or dtypes).
// Defined in ops_matrix.cpp, which plans every product. Thread safety: any thread.
struct GemmParams {
    std::string bytes;
    std::vector<int64_t> pointerOffsets;
    int64_t blocks = 1;
};

GemmParams gemmParams(const at::Tensor& a, const at::Tensor& b, const at::Tensor& out,
                      const GemmConfig& config);

}  // namespace torch_mtia
