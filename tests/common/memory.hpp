// Device memory for tests of the public ABI: allocations that report failures as test failures,
// owners of device buffers, copies back to the host and checks of their values, statistics.
#pragma once

#include <gtest/gtest.h>
#include <mtia/mtia.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mtia_test {

inline constexpr size_t kKiB = size_t{1} << 10;
inline constexpr size_t kMiB = size_t{1} << 20;

// mtiaMemoryGetStats of dev (and a test failure when it fails).
mtiaMemoryStats memStats(int dev = 0);

// mtiaMallocAsync that returns the pointer (null and a test failure when it fails).
void* mallocOn(size_t size, mtiaStream_t stream = nullptr);
// mtiaFree, a test failure when it fails.
void freeOk(void* p);

// count floats of device memory on dev, freed with the owner.
class DeviceFloats {
public:
    DeviceFloats(size_t count, int dev = 0);
    ~DeviceFloats();
    DeviceFloats(const DeviceFloats&) = delete;
    DeviceFloats& operator=(const DeviceFloats&) = delete;

    mtiaError_t status() const { return status_; }
    float* get() const { return p_; }
    operator float*() const { return p_; }
    size_t count() const { return count_; }
    size_t bytes() const { return count_ * sizeof(float); }

private:
    float* p_ = nullptr;
    size_t count_;
    mtiaError_t status_ = mtiaErrorUnknown;
};

// Copies n floats of device memory back with the synchronous mtiaMemcpy (empty on failure, which is
// reported as a test failure).
std::vector<float> readBack(const float* d, size_t n);
// Writes host values to device memory with the synchronous mtiaMemcpy.
::testing::AssertionResult writeFloats(float* d, const std::vector<float>& v);
// Whether every element of v equals want (and v has n elements).
::testing::AssertionResult allEqual(const std::vector<float>& v, size_t n, float want);

}  // namespace mtia_test
