// Helpers shared by the simulator's unit tests: the driver table, device
// buffers, and one-line submission of the common commands.
#pragma once

#include "sim_driver.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>

namespace simtest {

inline constexpr uint64_t kGran = 2ull << 20;

// The driver's table, filled once per process (no init).
const mtiaDriverOps& table();
// true when the environment variable name is set to value.
bool envIs(const char* name, const char* value);

// A base for tests that need an initialised driver.
class SimTest : public ::testing::Test {
protected:
    void SetUp() override;
    const mtiaDriverOps& d = table();
    int32_t deviceCount() const;
    mtiaDrvDeviceInfo info(int32_t dev) const;
    std::string lastError() const { return d.lastErrorMessage(); }
};

// Reserved, created and mapped device memory, released on destruction.
class DeviceBuffer {
public:
    DeviceBuffer(int32_t dev, uint64_t bytes);
    ~DeviceBuffer();
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    void* data() const { return va_; }
    float* f32() const { return static_cast<float*>(va_); }
    uint64_t size() const { return size_; }

private:
    int32_t dev_;
    uint64_t size_;
    void* va_ = nullptr;
    mtiaDrvMem mem_ = nullptr;
};

mtiaDrvQueue makeQueue(int32_t dev, int32_t priority = 0);
mtiaDrvKernel builtin(const char* name);

// Submits cmd and returns its number (0 and a test failure on error).
uint64_t submit(mtiaDrvQueue q, const mtiaDrvCommand& cmd);
uint64_t submitTimestamp(mtiaDrvQueue q, uint64_t* out);
uint64_t submitWait(mtiaDrvQueue q, mtiaDrvQueue target, uint64_t value);
// Runs fn on the queue's engine. The function object must outlive the command.
uint64_t submitHost(mtiaDrvQueue q, std::function<void()>* fn);
uint64_t submitSleep(mtiaDrvQueue q, uint64_t micros);

// A kernel launch command: args point at values whose types must have the kernel's sizes.
mtiaDrvCommand kernelCommand(mtiaDrvKernel kernel, mtiaDim3 grid, void** args,
                             mtiaDim3 block = {1, 1, 1}, uint64_t sharedMem = 0);

template <class... Args>
mtiaError_t launchStatus(mtiaDrvQueue q, mtiaDrvKernel kernel, mtiaDim3 grid, uint64_t* seq,
                         Args... values) {
    void* args[sizeof...(Args) + 1] = {static_cast<void*>(&values)..., nullptr};
    const mtiaDrvCommand cmd = kernelCommand(kernel, grid, args);
    return table().queueSubmit(q, &cmd, seq);
}

template <class... Args>
uint64_t launch(mtiaDrvQueue q, const char* name, mtiaDim3 grid, Args... values) {
    uint64_t seq = 0;
    const mtiaError_t err = launchStatus(q, builtin(name), grid, &seq, values...);
    EXPECT_EQ(err, mtiaSuccess) << name << ": " << table().lastErrorMessage();
    return seq;
}

// Waits for everything submitted to q; returns the status.
mtiaError_t finish(mtiaDrvQueue q);

// Runs test (a full gtest name) in a child process of this test binary with MTIA_SIM_ISOLATED set,
// so that it may fault devices without affecting this process. true when it ran and passed.
bool runIsolated(const std::string& test);
// In such a child: marks that the test really ran. Call at the start of isolated tests.
bool isolatedChild();

}  // namespace simtest
