// Pieces of the replay, pool and concurrency conformance tests (replay_test.cpp,
// graph_pools_test.cpp, graph_concurrency_test.cpp) that capture_test_util.hpp lacks: host
// functions and a gate that survive replays, reserved-memory readings, more built-in kernels and a
// scope guard. Uses only the public header.
#pragma once

#include "capture_test_util.hpp"

namespace mtia_test {

inline constexpr mtiaMemPoolId_t kNewPool{0, 0};

// Runs fn at scope exit (declare it after what fn must still see, so it runs first).
class OnExit {
public:
    explicit OnExit(std::function<void()> fn) : fn_(std::move(fn)) {}
    ~OnExit() {
        if (fn_) fn_();
    }
    OnExit(const OnExit&) = delete;
    OnExit& operator=(const OnExit&) = delete;

private:
    std::function<void()> fn_;
};

// ---- Memory -------------------------------------------------------------------------------------

inline int64_t reservedOf(const mtiaMemoryStats& s) {
    return s.reserved_bytes[mtiaStatAll].current;
}
inline int64_t reserved(int dev = 0) {
    return reservedOf(memStats(dev));
}

// Reserved bytes of device 0 once every device is idle and the default pools' caches are emptied
// (private pools keep theirs). Not legal while a capture is live.
inline int64_t settledReserved() {
    EXPECT_OK(mtiaDeviceSynchronize());
    EXPECT_OK(mtiaEmptyCache());
    return reserved();
}

inline float* floatsOn(size_t count, mtiaStream_t stream) {
    return static_cast<float*>(mallocOn(count * sizeof(float), stream));
}

// ---- Work --------------------------------------------------------------------------------------

inline mtiaError_t launchRelu(mtiaStream_t s, float* out, const float* a, uint64_t n) {
    static const mtiaFunction_t fn = builtin("relu_f32");
    void* args[] = {&out, &a, &n};
    return mtiaLaunchKernel(fn, kOne, kOne, args, 0, s);
}

// c[m,n] = a[m,k] b[k,n]
inline mtiaError_t launchMatmul(mtiaStream_t s, float* c, const float* a, const float* b,
                                uint64_t m, uint64_t n, uint64_t k) {
    static const mtiaFunction_t fn = builtin("matmul_f32");
    void* args[] = {&c, &a, &b, &m, &n, &k};
    return mtiaLaunchKernel(fn, kOne, kOne, args, 0, s);
}

// A host function that may run any number of times (a host-function node runs on every replay):
// unlike launchHost, its callable lives in the object, which must outlive every graph and stream
// that may still run it (declare it first).
class HostFn {
public:
    explicit HostFn(std::function<void()> fn) : fn_(std::move(fn)) {}
    HostFn(const HostFn&) = delete;
    HostFn& operator=(const HostFn&) = delete;

    mtiaError_t enqueue(mtiaStream_t s) {
        return mtiaLaunchHostFunc(
            s, [](void* self) { static_cast<HostFn*>(self)->fn_(); }, this);
    }

private:
    std::function<void()> fn_;
};

// A host function that blocks its stream until open(), any number of times (every replay of a graph
// holding it enters it); counts the entries. Must outlive what may run it: declare it before the
// streams and graphs, and open it (OnExit) before they are destroyed.
class Gate {
public:
    static constexpr auto kMaxBlock = 60s;

    Gate() = default;
    ~Gate() { open(); }
    Gate(const Gate&) = delete;
    Gate& operator=(const Gate&) = delete;

    mtiaError_t enqueue(mtiaStream_t s) {
        return mtiaLaunchHostFunc(
            s, [](void* self) { static_cast<Gate*>(self)->pass(); }, this);
    }
    void open() {
        std::lock_guard lock(mu_);
        open_ = true;
        cv_.notify_all();
    }
    bool waitEntered(int n = 1, Clock::duration timeout = kHang) {
        std::unique_lock lock(mu_);
        return cv_.wait_for(lock, timeout, [&] { return entered_ >= n; });
    }
    int entered() {
        std::lock_guard lock(mu_);
        return entered_;
    }
    int inside() {
        std::lock_guard lock(mu_);
        return inside_;
    }

private:
    void pass() {
        std::unique_lock lock(mu_);
        ++entered_;
        ++inside_;
        cv_.notify_all();
        cv_.wait_for(lock, kMaxBlock, [&] { return open_; });
        --inside_;
    }
    std::mutex mu_;
    std::condition_variable cv_;
    bool open_ = false;
    int entered_ = 0;
    int inside_ = 0;
};

}  // namespace mtia_test
