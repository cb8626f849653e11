// The caching-allocator conformance tests' pieces beyond the shared test helpers (tests/common):
// statistics snapshots and shorthands, a byte pattern to write and check, and a fixture that starts
// every test from an empty cache. Their EXPECT_FAILS(want, call, "a|b") requires the last-error
// message to hold each '|'-separated needle. Uses only the public header.
//
// The tests of one program share a process and so one allocator; every test
// starts from an emptied cache and asserts deltas of the statistics, and
// settings that cannot be taken back (max_split_size_mb,
// garbage_collection_threshold) are used only by suites that run in a
// process of their own (see CMakeLists.txt / meson.build).
#pragma once

#include <gtest/gtest.h>
#include <mtia/mtia.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/async_call.hpp"
#include "common/eventually.hpp"
#include "common/host_launch.hpp"
#include "common/kernels.hpp"
#include "common/latch.hpp"
#include "common/memory.hpp"
#include "common/scopes.hpp"
#include "common/status.hpp"

// EXPECT_FAILS(mtiaErrorInvalidValue, mtiaFree(p), "mtiaFree|inside")
#define EXPECT_FAILS(want, call, needles) EXPECT_FAILS_SAYING(want, call, needles)

namespace alloc_test {

using namespace ::mtia_test;

// ---- Statistics --------------------------------------------------------------------------------

// Field shorthands: the current value of a stat array's view.
inline int64_t cur(const mtiaStat (&a)[3], int view = mtiaStatAll) {
    return a[view].current;
}

struct MemInfo {
    size_t free = 0, total = 0;
};
inline MemInfo memInfo() {
    MemInfo m;
    if (mtiaMemGetInfo(&m.free, &m.total) != mtiaSuccess)
        ADD_FAILURE() << "mtiaMemGetInfo: " << mtiaGetLastErrorMessage();
    return m;
}

// ---- Contents -----------------------------------------------------------------------------------

// Writes a byte pattern (seeded) to device memory and checks it back.
inline void writePattern(void* dev, size_t bytes, unsigned seed) {
    std::vector<unsigned char> host(bytes);
    for (size_t i = 0; i < bytes; ++i)
        host[i] = static_cast<unsigned char>((i * 131u + seed * 7u) >> 3);
    const mtiaError_t st = mtiaMemcpy(dev, host.data(), bytes, mtiaMemcpyHostToDevice);
    if (st != mtiaSuccess) ADD_FAILURE() << "mtiaMemcpy(H2D): " << mtiaGetLastErrorMessage();
}
inline ::testing::AssertionResult hasPattern(const void* dev, size_t bytes, unsigned seed) {
    std::vector<unsigned char> host(bytes, 0);
    if (mtiaMemcpy(host.data(), dev, bytes, mtiaMemcpyDeviceToHost) != mtiaSuccess)
        return ::testing::AssertionFailure() << "mtiaMemcpy(D2H): " << mtiaGetLastErrorMessage();
    for (size_t i = 0; i < bytes; ++i)
        if (host[i] != static_cast<unsigned char>((i * 131u + seed * 7u) >> 3))
            return ::testing::AssertionFailure() << "byte " << i << " of " << dev << " changed";
    return ::testing::AssertionSuccess();
}

// ---- Fixture ------------------------------------------------------------------------------------

// Every test starts with the devices idle and the default pools' caches emptied, so statistics
// deltas and segment counts are the test's own.
class AllocTest : public ::testing::Test {
protected:
    void SetUp() override {
        int n = 0;
        ASSERT_OK(mtiaGetDeviceCount(&n));
        ASSERT_GE(n, 1);
        devices_ = n;
        for (int d = 0; d < n; ++d) {
            DeviceScope scope(d);
            ASSERT_OK(mtiaDeviceSynchronize());
        }
        ASSERT_OK(mtiaSetDevice(0));
        ASSERT_OK(mtiaEmptyCache());
    }
    void TearDown() override {
        mtiaSetDevice(0);
        for (int d = 0; d < devices_; ++d) {
            DeviceScope scope(d);
            mtiaDeviceSynchronize();
        }
    }
    int devices_ = 0;
};

}  // namespace alloc_test
