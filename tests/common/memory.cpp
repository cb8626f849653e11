#include "memory.hpp"

#include "scopes.hpp"

namespace mtia_test {

mtiaMemoryStats memStats(int dev) {
    mtiaMemoryStats s = MTIA_MEMORY_STATS_INIT;
    const mtiaError_t st = mtiaMemoryGetStats(dev, &s);
    if (st != mtiaSuccess)
        ADD_FAILURE() << "mtiaMemoryGetStats(" << dev << ") failed: " << mtiaGetLastErrorMessage();
    return s;
}

void* mallocOn(size_t size, mtiaStream_t stream) {
    void* p = nullptr;
    const mtiaError_t st = mtiaMallocAsync(&p, size, stream);
    if (st != mtiaSuccess) {
        ADD_FAILURE() << "mtiaMallocAsync(" << size << ") returned " << mtiaGetErrorName(st) << ": "
                      << mtiaGetLastErrorMessage();
        return nullptr;
    }
    return p;
}

void freeOk(void* p) {
    const mtiaError_t st = mtiaFree(p);
    if (st != mtiaSuccess) ADD_FAILURE() << "mtiaFree(" << p << "): " << mtiaGetLastErrorMessage();
}

DeviceFloats::DeviceFloats(size_t count, int dev) : count_(count) {
    DeviceScope scope(dev);
    void* p = nullptr;
    status_ = mtiaMalloc(&p, count * sizeof(float));
    p_ = static_cast<float*>(p);
}

DeviceFloats::~DeviceFloats() {
    if (p_ != nullptr) mtiaFree(p_);
}

std::vector<float> readBack(const float* d, size_t n) {
    std::vector<float> host(n, -12345.0f);
    const mtiaError_t st = mtiaMemcpy(host.data(), d, n * sizeof(float), mtiaMemcpyDeviceToHost);
    if (st != mtiaSuccess) {
        ADD_FAILURE() << "mtiaMemcpy(D2H) returned " << mtiaGetErrorName(st) << ": "
                      << mtiaGetLastErrorMessage();
        return {};
    }
    return host;
}

::testing::AssertionResult writeFloats(float* d, const std::vector<float>& v) {
    const mtiaError_t rc =
        mtiaMemcpy(d, v.data(), v.size() * sizeof(float), mtiaMemcpyHostToDevice);
    if (rc == mtiaSuccess) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "mtiaMemcpy(H2D) returned " << mtiaGetErrorName(rc)
                                         << ": " << mtiaGetLastErrorMessage();
}

::testing::AssertionResult allEqual(const std::vector<float>& v, size_t n, float want) {
    if (v.size() != n)
        return ::testing::AssertionFailure() << "got " << v.size() << " values, expected " << n;
    for (size_t i = 0; i < n; ++i)
        if (v[i] != want)
            return ::testing::AssertionFailure()
                   << "element " << i << " is " << v[i] << ", expected " << want;
    return ::testing::AssertionSuccess();
}

}  // namespace mtia_test
