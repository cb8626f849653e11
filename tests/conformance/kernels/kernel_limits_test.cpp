// The device's kernel limits (mtiaDeviceProp.maxKernelArgs, maxKernelArgBytes, maxKernelBuffers):
// each one refused with its message, and accepted exactly at the limit, for launches, captures and
// mtiaBenchmarkKernel. Each suite runs in its own process with the MTIA_SIM_* setting it names
// (CMakeLists.txt / meson.build); the built-in kernels are the probes:
//   add_f32    float* out, const float* a, const float* b, uint64_t n   4 arguments, 32 bytes
//   scale_f32  float* out, const float* a, float s, uint64_t n          4 arguments, 28 bytes
//   matmul_f32 float* c, const float* a, const float* b, uint64_t m, n, k  6 arguments, 48 bytes
#include <gtest/gtest.h>
#include <mtia/mtia.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/kernels.hpp"
#include "common/memory.hpp"
#include "common/scopes.hpp"
#include "common/status.hpp"

namespace {

using mtia_test::builtin;
using mtia_test::DeviceFloats;
using mtia_test::kOne;

constexpr uint64_t kN = 16;

mtiaDeviceProp props() {
    mtiaDeviceProp p = MTIA_DEVICE_PROP_INIT;
    EXPECT_OK(mtiaGetDeviceProperties(&p, 0));
    return p;
}

// Skips unless the test entry set var (the suites need their own process and setting).
bool setting(const char* var) {
    return std::getenv(var) != nullptr;
}

mtiaError_t launchAdd(mtiaStream_t s, float* out, const float* a, const float* b) {
    uint64_t n = kN;
    void* args[] = {&out, &a, &b, &n};
    return mtiaLaunchKernel(builtin("add_f32"), kOne, kOne, args, 0, s);
}

mtiaError_t launchMatmul(mtiaStream_t s, float* c, const float* a, const float* b) {
    uint64_t m = 4, n = 4, k = 4;
    void* args[] = {&c, &a, &b, &m, &n, &k};
    return mtiaLaunchKernel(builtin("matmul_f32"), kOne, kOne, args, 0, s);
}

struct Outcome {
    mtiaError_t status;
    std::string message;
};

// Runs launch inside a capture of a fresh stream: its status and message. A refused launch leaves
// the capture intact (it ends cleanly); the graph is destroyed.
template <typename Launch>
Outcome captured(Launch launch) {
    mtia_test::Stream s;
    EXPECT_OK(s.status());
    EXPECT_OK(mtiaStreamBeginCapture(s, mtiaStreamCaptureModeGlobal));
    const mtiaError_t st = launch(s.get());
    Outcome out{st, st == mtiaSuccess ? "" : mtiaGetLastErrorMessage()};
    mtiaGraph_t g = nullptr;
    EXPECT_OK(mtiaStreamEndCapture(s, &g));
    EXPECT_OK(mtiaGraphDestroy(g));
    return out;
}

::testing::AssertionResult refusedSaying(const Outcome& o, const std::string& text) {
    if (o.status != mtiaErrorInvalidValue)
        return ::testing::AssertionFailure()
               << "status " << mtiaGetErrorName(o.status) << ", expected mtiaErrorInvalidValue";
    if (o.message.find(text) == std::string::npos)
        return ::testing::AssertionFailure()
               << "message '" << o.message << "' lacks '" << text << "'";
    return ::testing::AssertionSuccess();
}

Outcome now(mtiaError_t st) {
    return {st, st == mtiaSuccess ? "" : mtiaGetLastErrorMessage()};
}

mtiaError_t benchmarkMatmul(float* c, const float* a, const float* b) {
    uint64_t m = 4, n = 4, k = 4;
    void* args[] = {&c, &a, &b, &m, &n, &k};
    mtiaBenchmarkOptions o = MTIA_BENCHMARK_OPTIONS_INIT;
    o.repetitions = 1;
    float t = 0;
    return mtiaBenchmarkKernel(builtin("matmul_f32"), kOne, kOne, args, 0, nullptr, &o, &t);
}

}  // namespace

// Without settings: what the simulated device can carry at all, and the host's cache.
TEST(LimitsDefault, PropertiesShowTheMaxima) {
    const mtiaDeviceProp p = props();
    EXPECT_EQ(p.maxKernelArgs, 32);
    EXPECT_EQ(p.maxKernelBuffers, 32);
    EXPECT_EQ(p.maxKernelArgBytes, 4096u);
    EXPECT_GT(p.l2CacheSize, 0u);
    // A struct from before the fields gets none of them (and nothing past its end is written).
    struct {
        mtiaDeviceProp p;
        uint64_t guard;
    } old{};
    old.p.structSize = offsetof(mtiaDeviceProp, maxKernelArgs);
    old.p.maxKernelArgs = -7;
    ASSERT_OK(mtiaGetDeviceProperties(&old.p, 0));
    EXPECT_EQ(old.p.maxKernelArgs, -7);
    DeviceFloats a(16), b(16), c(16);
    EXPECT_OK(launchMatmul(nullptr, c, a, b));
    EXPECT_OK(mtiaDeviceSynchronize());
}

TEST(LimitsArgs, RefusedAboveAcceptedAt) {
    if (!setting("MTIA_SIM_MAX_KERNEL_ARGS")) GTEST_SKIP() << "runs as test kernel_limits_args";
    const mtiaDeviceProp p = props();
    ASSERT_EQ(p.maxKernelArgs, 4);
    EXPECT_EQ(p.maxKernelBuffers, 4) << "buffers beyond the arguments cannot be named";
    DeviceFloats a(16), b(16), c(16);
    const char* msg = "kernel 'matmul_f32' takes 6 arguments; device 0 allows 4 (maxKernelArgs)";
    EXPECT_TRUE(refusedSaying(now(launchMatmul(nullptr, c, a, b)), msg));
    EXPECT_TRUE(
        refusedSaying(captured([&](mtiaStream_t s) { return launchMatmul(s, c, a, b); }), msg));
    EXPECT_TRUE(refusedSaying(now(benchmarkMatmul(c, a, b)), msg));
    EXPECT_OK(launchAdd(nullptr, c, a, b));  // 4 arguments: at the limit
    EXPECT_OK(captured([&](mtiaStream_t s) { return launchAdd(s, c, a, b); }).status);
    EXPECT_OK(mtiaDeviceSynchronize());
}

TEST(LimitsArgBytes, RefusedAboveAcceptedAt) {
    if (!setting("MTIA_SIM_MAX_KERNEL_ARG_BYTES"))
        GTEST_SKIP() << "runs as test kernel_limits_arg_bytes";
    ASSERT_EQ(props().maxKernelArgBytes, 32u);
    DeviceFloats a(16), b(16), c(16);
    const char* msg =
        "kernel 'matmul_f32' takes 48 bytes of arguments; device 0 allows 32 (maxKernelArgBytes)";
    EXPECT_TRUE(refusedSaying(now(launchMatmul(nullptr, c, a, b)), msg));
    EXPECT_TRUE(
        refusedSaying(captured([&](mtiaStream_t s) { return launchMatmul(s, c, a, b); }), msg));
    EXPECT_TRUE(refusedSaying(now(benchmarkMatmul(c, a, b)), msg));
    EXPECT_OK(launchAdd(nullptr, c, a, b));  // 32 bytes: at the limit
    EXPECT_OK(captured([&](mtiaStream_t s) { return launchAdd(s, c, a, b); }).status);
    EXPECT_OK(mtiaDeviceSynchronize());
}

TEST(LimitsBuffers, DistinctAllocationsCount) {
    if (!setting("MTIA_SIM_MAX_KERNEL_BUFFERS"))
        GTEST_SKIP() << "runs as test kernel_limits_buffers";
    ASSERT_EQ(props().maxKernelBuffers, 2);
    DeviceFloats a(64), b(16), c(16);
    const char* msg =
        "kernel 'add_f32' is launched with 3 distinct device buffers; device 0 allows "
        "2 (maxKernelBuffers)";
    EXPECT_TRUE(refusedSaying(now(launchAdd(nullptr, c, a, b)), msg));
    EXPECT_TRUE(
        refusedSaying(captured([&](mtiaStream_t s) { return launchAdd(s, c, a, b); }), msg));
    // At the limit: the same buffer twice, or two places in one allocation, are one buffer.
    EXPECT_OK(launchAdd(nullptr, c, a, a));
    EXPECT_OK(launchAdd(nullptr, a.get() + 32, a, b));
    EXPECT_OK(captured([&](mtiaStream_t s) { return launchAdd(s, a.get() + 16, a, b); }).status);
    // The uint64_t n is pointer-sized but no device address: it is not a buffer.
    EXPECT_OK(launchAdd(nullptr, c, c, c));
    // Two buffers and one more: matmul's three pointers all differ.
    EXPECT_TRUE(refusedSaying(now(benchmarkMatmul(c, a, b)), "3 distinct device buffers"));
    EXPECT_OK(mtiaDeviceSynchronize());
}
