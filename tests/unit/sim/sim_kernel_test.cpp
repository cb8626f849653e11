// Built-in kernels against CPU references for many grid shapes, module
// kernels loaded from test_module.c, kernel handles and peer access.
#include "sim_test_util.hpp"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

using namespace simtest;

namespace {

class SimKernel : public SimTest {
protected:
    void SetUp() override {
        SimTest::SetUp();
        q = makeQueue(0);
    }
    void TearDown() override {
        if (q != nullptr) {
            EXPECT_EQ(d.queueDestroy(q), mtiaSuccess);
        }
    }
    mtiaDrvQueue q = nullptr;
};

const mtiaDim3 kGrids[] = {{1, 1, 1},  {2, 1, 1}, {3, 1, 1},    {7, 1, 1},
                           {64, 1, 1}, {2, 3, 2}, {1000, 1, 1}, {5000, 1, 1}};

std::vector<float> randomFloats(size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-10.0f, 10.0f);
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng);
    return v;
}

void upload(float* dst, const std::vector<float>& src) {
    std::memcpy(dst, src.data(), src.size() * sizeof(float));
}

std::string gridName(mtiaDim3 g) {
    return "grid (" + std::to_string(g.x) + "," + std::to_string(g.y) + "," + std::to_string(g.z) +
           ")";
}

}  // namespace

TEST_F(SimKernel, ElementwiseBuiltinsMatchTheCpu) {
    const uint64_t n = 1237;  // not a multiple of any grid
    DeviceBuffer out(0, n * 4), a(0, n * 4), b(0, n * 4);
    const std::vector<float> va = randomFloats(n, 1), vb = randomFloats(n, 2);
    const auto* pa = static_cast<const float*>(a.f32());
    const auto* pb = static_cast<const float*>(b.f32());
    for (const mtiaDim3 grid : kGrids) {
        SCOPED_TRACE(gridName(grid));
        auto check = [&](const char* what, auto reference) {
            ASSERT_EQ(finish(q), mtiaSuccess) << what << ": " << lastError();
            for (uint64_t i = 0; i < n; ++i)
                ASSERT_EQ(out.f32()[i], reference(i)) << what << " at " << i;
        };
        upload(a.f32(), va);
        upload(b.f32(), vb);
        launch(q, "fill_f32", grid, out.f32(), 2.5f, n);
        check("fill_f32", [](uint64_t) { return 2.5f; });
        launch(q, "copy_f32", grid, out.f32(), pa, n);
        check("copy_f32", [&](uint64_t i) { return va[i]; });
        launch(q, "add_f32", grid, out.f32(), pa, pb, n);
        check("add_f32", [&](uint64_t i) { return va[i] + vb[i]; });
        launch(q, "mul_f32", grid, out.f32(), pa, pb, n);
        check("mul_f32", [&](uint64_t i) { return va[i] * vb[i]; });
        launch(q, "scale_f32", grid, out.f32(), pa, -0.5f, n);
        check("scale_f32", [&](uint64_t i) { return va[i] * -0.5f; });
        launch(q, "relu_f32", grid, out.f32(), pa, n);
        check("relu_f32", [&](uint64_t i) { return va[i] < 0.0f ? 0.0f : va[i]; });
        upload(out.f32(), vb);
        launch(q, "axpy_f32", grid, out.f32(), 3.0f, pa, n);
        check("axpy_f32", [&](uint64_t i) { return 3.0f * va[i] + vb[i]; });
    }
}

TEST_F(SimKernel, ZeroElementsIsANoOp) {
    float* none = nullptr;
    const float* cnone = nullptr;
    for (const mtiaDim3 grid : {mtiaDim3{1, 1, 1}, mtiaDim3{16, 1, 1}}) {
        launch(q, "fill_f32", grid, none, 1.0f, uint64_t{0});
        launch(q, "copy_f32", grid, none, cnone, uint64_t{0});
        launch(q, "add_f32", grid, none, cnone, cnone, uint64_t{0});
        launch(q, "mul_f32", grid, none, cnone, cnone, uint64_t{0});
        launch(q, "scale_f32", grid, none, cnone, 1.0f, uint64_t{0});
        launch(q, "axpy_f32", grid, none, 1.0f, cnone, uint64_t{0});
        launch(q, "relu_f32", grid, none, cnone, uint64_t{0});
        launch(q, "reduce_sum_f32", grid, none, cnone, uint64_t{0});
        launch(q, "matmul_f32", grid, none, cnone, cnone, uint64_t{0}, uint64_t{4}, uint64_t{4});
        launch(q, "matmul_f32", grid, none, cnone, cnone, uint64_t{4}, uint64_t{0}, uint64_t{4});
        launch(q, "sleep_us", grid, uint64_t{0});
    }
    EXPECT_EQ(finish(q), mtiaSuccess) << lastError();
    EXPECT_EQ(d.deviceGetStatus(0), mtiaSuccess);
}

TEST_F(SimKernel, ReduceSumForAnyGrid) {
    for (const uint64_t n : {uint64_t{1}, uint64_t{1000}, uint64_t{1} << 20}) {
        DeviceBuffer a(0, n * 4), out(0, 4);
        const std::vector<float> v = randomFloats(n, static_cast<unsigned>(n));
        upload(a.f32(), v);
        double reference = 0.0;
        for (float x : v) reference += x;
        for (const mtiaDim3 grid : kGrids) {
            out.f32()[0] = -1.0f;
            launch(q, "reduce_sum_f32", grid, out.f32(), static_cast<const float*>(a.f32()), n);
            ASSERT_EQ(finish(q), mtiaSuccess) << lastError();
            EXPECT_NEAR(out.f32()[0], reference, 1e-5 * std::max(1.0, std::abs(reference)) + 1e-3)
                << "n " << n << ", " << gridName(grid);
        }
    }
}

TEST_F(SimKernel, MatmulForAnyGrid) {
    const uint64_t m = 13, n = 7, k = 5;
    DeviceBuffer c(0, m * n * 4), a(0, m * k * 4), b(0, k * n * 4);
    const std::vector<float> va = randomFloats(m * k, 3), vb = randomFloats(k * n, 4);
    upload(a.f32(), va);
    upload(b.f32(), vb);
    for (const mtiaDim3 grid : kGrids) {
        std::fill(c.f32(), c.f32() + m * n, -1.0f);
        launch(q, "matmul_f32", grid, c.f32(), static_cast<const float*>(a.f32()),
               static_cast<const float*>(b.f32()), m, n, k);
        ASSERT_EQ(finish(q), mtiaSuccess) << lastError();
        for (uint64_t i = 0; i < m; ++i) {
            for (uint64_t j = 0; j < n; ++j) {
                float ref = 0.0f;
                for (uint64_t p = 0; p < k; ++p) ref += va[i * k + p] * vb[p * n + j];
                EXPECT_NEAR(c.f32()[i * n + j], ref, 1e-4f)
                    << i << "," << j << " " << gridName(grid);
            }
        }
    }
    // k = 0: the product of empty matrices is all zeros.
    launch(q, "matmul_f32", {3, 1, 1}, c.f32(), static_cast<const float*>(nullptr),
           static_cast<const float*>(nullptr), m, n, uint64_t{0});
    ASSERT_EQ(finish(q), mtiaSuccess) << lastError();
    for (uint64_t i = 0; i < m * n; ++i) EXPECT_EQ(c.f32()[i], 0.0f);
}

TEST_F(SimKernel, SleepOccupiesItsEngineForTheTime) {
    uint64_t t0 = 0, t1 = 0;
    submitTimestamp(q, &t0);
    launch(q, "sleep_us", {8, 1, 1}, uint64_t{20'000});  // one sleep per launch, not per block
    submitTimestamp(q, &t1);
    ASSERT_EQ(finish(q), mtiaSuccess);
    EXPECT_GE(t1 - t0, 20'000'000u);
    EXPECT_LT(t1 - t0, 150'000'000u);
}

TEST_F(SimKernel, BuiltinLookupAndInfo) {
    const std::pair<const char*, std::vector<uint32_t>> expected[] = {
        {"fill_f32", {8, 4, 8}},
        {"copy_f32", {8, 8, 8}},
        {"add_f32", {8, 8, 8, 8}},
        {"mul_f32", {8, 8, 8, 8}},
        {"scale_f32", {8, 8, 4, 8}},
        {"axpy_f32", {8, 4, 8, 8}},
        {"relu_f32", {8, 8, 8}},
        {"reduce_sum_f32", {8, 8, 8}},
        {"matmul_f32", {8, 8, 8, 8, 8, 8}},
        {"sleep_us", {8}},
        {"noop", {}},
    };
    for (const auto& [name, sizes] : expected) {
        mtiaDrvKernel k = builtin(name);
        uint32_t count = 99;
        uint32_t argSizes[MTIA_DRIVER_MAX_KERNEL_ARGS];
        std::fill(std::begin(argSizes), std::end(argSizes), 77u);
        ASSERT_EQ(d.kernelGetInfo(k, &count, argSizes), mtiaSuccess) << name;
        ASSERT_EQ(count, sizes.size()) << name;
        for (uint32_t i = 0; i < count; ++i)
            EXPECT_EQ(argSizes[i], sizes[i]) << name << " arg " << i;
        for (uint32_t i = count; i < MTIA_DRIVER_MAX_KERNEL_ARGS; ++i) EXPECT_EQ(argSizes[i], 0u);
    }
    mtiaDrvKernel k = nullptr;
    EXPECT_EQ(d.moduleGetKernel(nullptr, "nope_f32", &k), mtiaErrorNotFound);
    EXPECT_NE(lastError().find("nope_f32"), std::string::npos) << lastError();
    EXPECT_NE(lastError().find("matmul_f32"), std::string::npos)
        << lastError();  // lists what exists
    EXPECT_EQ(d.moduleGetKernel(nullptr, nullptr, &k), mtiaErrorInvalidValue);
    EXPECT_EQ(d.moduleGetKernel(nullptr, "fill_f32", nullptr), mtiaErrorInvalidValue);
    uint32_t count = 0, sizes[MTIA_DRIVER_MAX_KERNEL_ARGS];
    EXPECT_EQ(d.kernelGetInfo(builtin("fill_f32"), nullptr, sizes), mtiaErrorInvalidValue);
    EXPECT_EQ(d.kernelGetInfo(builtin("fill_f32"), &count, nullptr), mtiaErrorInvalidValue);
    int notAKernel = 0;
    EXPECT_EQ(d.kernelGetInfo(reinterpret_cast<mtiaDrvKernel>(&notAKernel), &count, sizes),
              mtiaErrorInvalidHandle);
    EXPECT_EQ(d.kernelGetInfo(nullptr, &count, sizes), mtiaErrorInvalidHandle);
}

TEST_F(SimKernel, LaunchValidation) {
    DeviceBuffer buf(0, kGran);
    float* p = buf.f32();
    float value = 1.0f;
    uint64_t n = 4;
    void* args[] = {&p, &value, &n};
    mtiaDrvKernel fill = builtin("fill_f32");
    uint64_t seq = 0;
    auto submitWith = [&](mtiaDim3 grid, mtiaDim3 block, uint64_t shared, void** a) {
        const mtiaDrvCommand c = kernelCommand(fill, grid, a, block, shared);
        return d.queueSubmit(q, &c, &seq);
    };
    EXPECT_EQ(submitWith({0, 1, 1}, {1, 1, 1}, 0, args), mtiaErrorInvalidValue);
    EXPECT_EQ(submitWith({1, 0, 1}, {1, 1, 1}, 0, args), mtiaErrorInvalidValue);
    EXPECT_EQ(submitWith({1, 1, 0}, {1, 1, 1}, 0, args), mtiaErrorInvalidValue);
    EXPECT_EQ(submitWith({1, 1, 1}, {0, 1, 1}, 0, args), mtiaErrorInvalidValue);
    EXPECT_EQ(submitWith({1, 1, 1}, {1025, 1, 1}, 0, args), mtiaErrorInvalidValue);
    EXPECT_EQ(submitWith({1, 1, 1}, {32, 32, 2}, 0, args), mtiaErrorInvalidValue);  // 2048 threads
    EXPECT_EQ(submitWith({1, 1, 1}, {1, 1, 65}, 0, args), mtiaErrorInvalidValue);
    EXPECT_EQ(submitWith({1, 65536, 1}, {1, 1, 1}, 0, args), mtiaErrorInvalidValue);
    EXPECT_EQ(submitWith({2147483648u, 1, 1}, {1, 1, 1}, 0, args), mtiaErrorInvalidValue);
    EXPECT_EQ(submitWith({1, 1, 1}, {1, 1, 1}, 48 * 1024 + 1, args), mtiaErrorInvalidValue);
    EXPECT_EQ(submitWith({1, 1, 1}, {1, 1, 1}, 0, nullptr), mtiaErrorInvalidValue);
    void* withNull[] = {&p, nullptr, &n};
    EXPECT_EQ(submitWith({1, 1, 1}, {1, 1, 1}, 0, withNull), mtiaErrorInvalidValue);
    EXPECT_NE(lastError().find("args[1]"), std::string::npos) << lastError();
    // Limits themselves are fine.
    EXPECT_EQ(submitWith({1, 1, 1}, {1024, 1, 1}, 48 * 1024, args), mtiaSuccess) << lastError();
    EXPECT_EQ(submitWith({1, 1, 1}, {16, 1, 64}, 0, args), mtiaSuccess) << lastError();
    int notAKernel = 0;
    mtiaDrvCommand c = kernelCommand(reinterpret_cast<mtiaDrvKernel>(&notAKernel), {1, 1, 1}, args);
    EXPECT_EQ(d.queueSubmit(q, &c, &seq), mtiaErrorInvalidHandle);
    c.u.kernel.kernel = nullptr;
    EXPECT_EQ(d.queueSubmit(q, &c, &seq), mtiaErrorInvalidHandle);
    // Argument values are copied at submit: changing them afterwards changes nothing.
    submitSleep(q, 20'000);
    value = 7.0f;
    EXPECT_EQ(submitWith({1, 1, 1}, {1, 1, 1}, 0, args), mtiaSuccess);
    value = -1.0f;
    p = nullptr;
    ASSERT_EQ(finish(q), mtiaSuccess) << lastError();
    EXPECT_EQ(buf.f32()[0], 7.0f);
    EXPECT_EQ(buf.f32()[3], 7.0f);
}

TEST_F(SimKernel, PeerAccessLetsKernelsTouchAnotherDevice) {
    if (deviceCount() < 2) GTEST_SKIP() << "needs two devices";
    DeviceBuffer remote(1, kGran);
    ASSERT_EQ(d.deviceSetPeerAccess(0, 1, 1), mtiaSuccess);
    launch(q, "fill_f32", {4, 1, 1}, remote.f32(), 9.0f, uint64_t{1000});
    ASSERT_EQ(finish(q), mtiaSuccess) << lastError();
    EXPECT_EQ(remote.f32()[999], 9.0f);
    EXPECT_EQ(d.deviceSetPeerAccess(0, 1, 0), mtiaSuccess);
    EXPECT_EQ(d.deviceSetPeerAccess(0, 0, 1), mtiaErrorInvalidDevice);
    EXPECT_EQ(d.deviceSetPeerAccess(0, 99, 1), mtiaErrorInvalidDevice);
    EXPECT_EQ(d.deviceSetPeerAccess(-1, 1, 1), mtiaErrorInvalidDevice);
    EXPECT_EQ(d.deviceSetPeerAccess(0, 1, 2), mtiaErrorInvalidValue);
}

// ---- module kernels (MTIA_TEST_MODULE names test_module.c's shared object) ----

class SimModule : public SimKernel {
protected:
    void SetUp() override {
        path = std::getenv("MTIA_TEST_MODULE");
        if (path == nullptr)
            GTEST_SKIP() << "MTIA_TEST_MODULE is not set (the test registration sets it)";
        SimKernel::SetUp();
        ASSERT_EQ(d.moduleLoad(path, &module), mtiaSuccess) << lastError();
    }
    void TearDown() override {
        if (module != nullptr) {
            EXPECT_EQ(d.moduleUnload(module), mtiaSuccess);
        }
        SimKernel::TearDown();
    }
    mtiaDrvKernel kernel(const char* name) {
        mtiaDrvKernel k = nullptr;
        EXPECT_EQ(d.moduleGetKernel(module, name, &k), mtiaSuccess) << lastError();
        return k;
    }
    template <class... Args>
    uint64_t run(const char* name, mtiaDim3 grid, Args... values) {
        uint64_t seq = 0;
        EXPECT_EQ(launchStatus(q, kernel(name), grid, &seq, values...), mtiaSuccess) << lastError();
        return seq;
    }
    int32_t isDeviceRange(const void* ptr, uint64_t bytes, mtiaDrvQueue on = nullptr) {
        DeviceBuffer out(0, 4);
        out.f32()[0] = -1;
        uint64_t seq = 0;
        EXPECT_EQ(launchStatus(on ? on : q, kernel("test_is_device_range"), {1, 1, 1}, &seq,
                               static_cast<int32_t*>(out.data()), ptr, bytes),
                  mtiaSuccess);
        EXPECT_EQ(finish(on ? on : q), mtiaSuccess);
        return *static_cast<int32_t*>(out.data());
    }
    const char* path = nullptr;
    mtiaDrvModule module = nullptr;
};

TEST_F(SimModule, BlocksRunXFastestThenYThenZ) {
    DeviceBuffer out(0, kGran);
    std::memset(out.data(), 0, 4096);
    run("test_block_order", {3, 2, 2}, static_cast<uint32_t*>(out.data()));
    ASSERT_EQ(finish(q), mtiaSuccess) << lastError();
    const auto* o = static_cast<const uint32_t*>(out.data());
    ASSERT_EQ(o[0], 12u);
    for (uint32_t i = 0; i < 12; ++i) EXPECT_EQ(o[1 + i], i);
}

TEST_F(SimModule, ArgumentsOfAnySizeArriveIntact) {
    struct TestParams {
        float a, b, c;
        uint8_t tag;
    } params{1.5f, -2.0f, 3.25f, 200};
    uint32_t sizes[MTIA_DRIVER_MAX_KERNEL_ARGS];
    uint32_t count = 0;
    ASSERT_EQ(d.kernelGetInfo(kernel("test_struct_arg"), &count, sizes), mtiaSuccess);
    ASSERT_EQ(count, 4u);
    EXPECT_EQ(sizes[1], sizeof(TestParams));
    EXPECT_EQ(sizes[2], 1u);
    DeviceBuffer out(0, 64);
    submitSleep(q, 10'000);
    run("test_struct_arg", {1, 1, 1}, out.f32(), params, uint8_t{17}, 6.5);
    params.a = 0;  // too late to matter
    ASSERT_EQ(finish(q), mtiaSuccess) << lastError();
    const float* o = out.f32();
    EXPECT_EQ(o[0], 1.5f);
    EXPECT_EQ(o[1], -2.0f);
    EXPECT_EQ(o[2], 3.25f);
    EXPECT_EQ(o[3], 200.0f);
    EXPECT_EQ(o[4], 17.0f);
    EXPECT_EQ(o[5], 6.5f);
}

TEST_F(SimModule, SharedMemoryPerBlock) {
    DeviceBuffer out(0, 4096);
    float* p = out.f32();
    void* args[] = {&p};
    const mtiaDrvCommand c =
        kernelCommand(kernel("test_shared"), {4, 1, 1}, args, {8, 4, 2}, 48 * 1024);
    submit(q, c);
    ASSERT_EQ(finish(q), mtiaSuccess) << lastError();
    float reference = 0.0f;  // summed in the kernel's order, so the float result is exact
    for (int i = 0; i < 48 * 1024 / 4; ++i) reference += static_cast<float>(i);
    for (int b = 0; b < 4; ++b) EXPECT_EQ(p[b], reference) << b;
    EXPECT_EQ(p[4], 48.0f * 1024);
    EXPECT_EQ(p[5], 64.0f);
}

TEST_F(SimModule, IsDeviceRangeSeesMappingsOfTheDeviceAndItsPeers) {
    // A reservation of three granules with only the first mapped, then also the second.
    void* va = nullptr;
    mtiaDrvMem m1 = nullptr, m2 = nullptr;
    ASSERT_EQ(d.vaReserve(0, 3 * kGran, 0, &va), mtiaSuccess);
    ASSERT_EQ(d.memCreate(0, kGran, &m1), mtiaSuccess);
    ASSERT_EQ(d.memCreate(0, kGran, &m2), mtiaSuccess);
    ASSERT_EQ(d.memMap(va, kGran, m1, 0), mtiaSuccess);
    const char* base = static_cast<const char*>(va);
    int host = 0;
    EXPECT_EQ(isDeviceRange(base, kGran), 1);
    EXPECT_EQ(isDeviceRange(base + 100, 16), 1);
    EXPECT_EQ(isDeviceRange(base + kGran - 4, 4), 1);
    EXPECT_EQ(isDeviceRange(base + kGran - 4, 8), 0);  // runs past the mapping
    EXPECT_EQ(isDeviceRange(base + kGran, 4), 0);      // reserved, not mapped
    EXPECT_EQ(isDeviceRange(&host, sizeof(host)), 0);
    EXPECT_EQ(isDeviceRange(nullptr, 4), 0);
    // Two mappings back to back count as one range.
    ASSERT_EQ(d.memMap(static_cast<char*>(va) + kGran, kGran, m2, 0), mtiaSuccess);
    EXPECT_EQ(isDeviceRange(static_cast<char*>(va) + kGran - 8, 16), 1);
    EXPECT_EQ(isDeviceRange(va, 2 * kGran), 1);
    EXPECT_EQ(isDeviceRange(va, 2 * kGran + 1), 0);
    ASSERT_EQ(d.memUnmap(va, 2 * kGran), mtiaSuccess);
    EXPECT_EQ(isDeviceRange(va, 16), 0);  // no longer mapped
    ASSERT_EQ(d.memRelease(m1), mtiaSuccess);
    ASSERT_EQ(d.memRelease(m2), mtiaSuccess);
    ASSERT_EQ(d.vaRelease(0, va, 3 * kGran), mtiaSuccess);
    if (deviceCount() >= 2) {
        // Another device's memory only with peer access.
        DeviceBuffer remote(1, kGran);
        EXPECT_EQ(isDeviceRange(remote.data(), 64), 0);
        ASSERT_EQ(d.deviceSetPeerAccess(0, 1, 1), mtiaSuccess);
        EXPECT_EQ(isDeviceRange(remote.data(), 64), 1);
        ASSERT_EQ(d.deviceSetPeerAccess(0, 1, 0), mtiaSuccess);
        EXPECT_EQ(isDeviceRange(remote.data(), 64), 0);
    }
}

TEST_F(SimModule, LookupErrors) {
    mtiaDrvKernel k = nullptr;
    EXPECT_EQ(d.moduleGetKernel(module, "test_missing_args", &k), mtiaErrorNotFound);
    EXPECT_NE(lastError().find("test_missing_args_mtia_args"), std::string::npos) << lastError();
    EXPECT_EQ(d.moduleGetKernel(module, "no_such_kernel", &k), mtiaErrorNotFound);
    EXPECT_NE(lastError().find("no_such_kernel"), std::string::npos) << lastError();
    EXPECT_EQ(d.moduleGetKernel(module, "fill_f32", &k),
              mtiaErrorNotFound);  // built-ins are not in modules
    EXPECT_EQ(d.moduleGetKernel(module, nullptr, &k), mtiaErrorInvalidValue);
    int notAModule = 0;
    EXPECT_EQ(d.moduleGetKernel(reinterpret_cast<mtiaDrvModule>(&notAModule), "test_noop", &k),
              mtiaErrorInvalidHandle);
    // The same kernel twice is the same handle.
    EXPECT_EQ(kernel("test_noop"), kernel("test_noop"));
    mtiaDrvModule other = nullptr;
    EXPECT_EQ(d.moduleLoad("/nonexistent/module.so", &other), mtiaErrorNotFound);
    EXPECT_NE(lastError().find("/nonexistent/module.so"), std::string::npos) << lastError();
    EXPECT_EQ(d.moduleLoad(nullptr, &other), mtiaErrorInvalidValue);
    EXPECT_EQ(d.moduleLoad(path, nullptr), mtiaErrorInvalidValue);
    EXPECT_EQ(d.moduleUnload(nullptr), mtiaErrorInvalidHandle);
    EXPECT_EQ(d.moduleUnload(reinterpret_cast<mtiaDrvModule>(&notAModule)), mtiaErrorInvalidHandle);
}

TEST_F(SimModule, UnloadWaitsForSubmittedKernels) {
    DeviceBuffer out(0, 64);
    submitSleep(q, 50'000);
    mtiaDrvKernel k = kernel("test_struct_arg");
    struct {
        float a, b, c;
        uint8_t tag;
    } params{4.0f, 5.0f, 6.0f, 7};
    uint64_t seq = 0;
    ASSERT_EQ(launchStatus(q, k, {1, 1, 1}, &seq, out.f32(), params, uint8_t{1}, 2.0), mtiaSuccess);
    // Unloading now drops the handle; the queued kernel keeps the code loaded until it ran.
    ASSERT_EQ(d.moduleUnload(module), mtiaSuccess);
    module = nullptr;
    ASSERT_EQ(finish(q), mtiaSuccess) << lastError();
    EXPECT_EQ(out.f32()[0], 4.0f);
    EXPECT_EQ(out.f32()[5], 2.0f);
    // The kernel handle died with the module.
    uint32_t count = 0, sizes[MTIA_DRIVER_MAX_KERNEL_ARGS];
    EXPECT_EQ(d.kernelGetInfo(k, &count, sizes), mtiaErrorInvalidHandle);
    EXPECT_EQ(launchStatus(q, k, {1, 1, 1}, &seq, out.f32(), params, uint8_t{1}, 2.0),
              mtiaErrorInvalidHandle);
}

TEST_F(SimModule, EmptyKernelThroughput) {
    mtiaDrvKernel k = kernel("test_noop");
    const mtiaDrvCommand c = kernelCommand(k, {1, 1, 1}, nullptr);
    constexpr int kCommands = 50000;
    uint64_t seq = 0;
    double ns = 0;
    for (int round = 0; round < 2; ++round) {  // the first round grows the queue's storage
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < kCommands; ++i) ASSERT_EQ(d.queueSubmit(q, &c, &seq), mtiaSuccess);
        ASSERT_EQ(d.queueWait(q, seq, MTIA_DRV_WAIT_SPIN), mtiaSuccess);
        ns =
            std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    }
    std::printf("[ info ] %.0f ns per enqueue-and-complete of an empty module kernel\n",
                ns / kCommands);
}
