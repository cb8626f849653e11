// Shared pieces of the caching-allocator conformance tests: status
// assertions that print error names and the last-error message, owners of
// streams and device memory, a latch that blocks a stream from a host
// function, statistics snapshots with deltas, and a fixture that starts
// every test from an empty cache. Uses only the public header.
//
// The tests of one program share a process and so one allocator; every test
// starts from an emptied cache and asserts deltas of the statistics, and
// settings that cannot be taken back (max_split_size_mb,
// garbage_collection_threshold) are used only by suites that run in a
// process of their own (see CMakeLists.txt / meson.build).
#pragma once

#include <gtest/gtest.h>
#include <mtia/mtia.h>
#include <sys/syscall.h>
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

namespace alloc_test {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

inline constexpr size_t kKiB = size_t{1} << 10;
inline constexpr size_t kMiB = size_t{1} << 20;
// How long a wait may take before it counts as a hang (generous: loaded machines, sanitizers).
inline constexpr Clock::duration kHang = 30s;

// ---- Status assertions -------------------------------------------------------------------------

inline ::testing::AssertionResult statusIs(const char*, const char* callExpr, mtiaError_t want, mtiaError_t got) {
  if (got == want) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << callExpr << " returned " << mtiaGetErrorName(got) << " (" << got
                                       << "), expected " << mtiaGetErrorName(want) << " (" << want
                                       << ")\n  last error message: " << mtiaGetLastErrorMessage();
}

#define EXPECT_STATUS(want, call) EXPECT_PRED_FORMAT2(::alloc_test::statusIs, want, call)
#define ASSERT_STATUS(want, call) ASSERT_PRED_FORMAT2(::alloc_test::statusIs, want, call)
#define EXPECT_OK(call) EXPECT_STATUS(mtiaSuccess, call)
#define ASSERT_OK(call) ASSERT_STATUS(mtiaSuccess, call)

// The call failed with want and the thread's last-error message holds each of needles (a '|'-separated
// list).
inline ::testing::AssertionResult failsSaying(const char*, const char* callExpr, const char*, mtiaError_t want,
                                              mtiaError_t got, const char* needles) {
  ::testing::AssertionResult status = statusIs("", callExpr, want, got);
  if (!status) return status;
  const std::string message = mtiaGetLastErrorMessage();
  std::string all(needles);
  size_t start = 0;
  while (start <= all.size()) {
    const size_t bar = all.find('|', start);
    const std::string needle = all.substr(start, bar == std::string::npos ? std::string::npos : bar - start);
    if (!needle.empty() && message.find(needle) == std::string::npos)
      return ::testing::AssertionFailure() << callExpr << ": the message does not say '" << needle << "': " << message;
    if (bar == std::string::npos) break;
    start = bar + 1;
  }
  return ::testing::AssertionSuccess();
}

// EXPECT_FAILS(mtiaErrorInvalidValue, mtiaFree(p), "mtiaFree|inside")
#define EXPECT_FAILS(want, call, needles) EXPECT_PRED_FORMAT3(::alloc_test::failsSaying, want, call, needles)

// ---- Statistics --------------------------------------------------------------------------------

inline mtiaMemoryStats stats(int dev = 0) {
  mtiaMemoryStats s = MTIA_MEMORY_STATS_INIT;
  const mtiaError_t st = mtiaMemoryGetStats(dev, &s);
  if (st != mtiaSuccess) ADD_FAILURE() << "mtiaMemoryGetStats(" << dev << ") failed: " << mtiaGetLastErrorMessage();
  return s;
}

// Field shorthands: the current value of a stat array's view.
inline int64_t cur(const mtiaStat (&a)[3], int view = mtiaStatAll) { return a[view].current; }

struct MemInfo {
  size_t free = 0, total = 0;
};
inline MemInfo memInfo() {
  MemInfo m;
  if (mtiaMemGetInfo(&m.free, &m.total) != mtiaSuccess)
    ADD_FAILURE() << "mtiaMemGetInfo: " << mtiaGetLastErrorMessage();
  return m;
}

// ---- Owners --------------------------------------------------------------------------------------

// Makes dev the calling thread's current device for the scope.
class DeviceScope {
 public:
  explicit DeviceScope(int dev) { ok_ = mtiaExchangeDevice(dev, &previous_) == mtiaSuccess; }
  ~DeviceScope() {
    if (ok_) mtiaSetDevice(previous_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = 0;
  bool ok_ = false;
};

// A stream of a device; the destructor waits for its work, then destroys it.
class Stream {
 public:
  explicit Stream(int dev = 0) {
    DeviceScope scope(dev);
    status_ = mtiaStreamCreate(&s_);
    if (status_ != mtiaSuccess) s_ = nullptr;
  }
  ~Stream() {
    if (s_ == nullptr) return;
    mtiaStreamSynchronize(s_);
    mtiaStreamDestroy(s_);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  mtiaError_t status() const { return status_; }
  mtiaStream_t get() const { return s_; }
  operator mtiaStream_t() const { return s_; }

 private:
  mtiaStream_t s_ = nullptr;
  mtiaError_t status_ = mtiaErrorUnknown;
};

// mtiaMallocAsync that returns the pointer (null and a test failure when it fails).
inline void* mallocOn(size_t size, mtiaStream_t stream = nullptr) {
  void* p = nullptr;
  const mtiaError_t st = mtiaMallocAsync(&p, size, stream);
  if (st != mtiaSuccess) {
    ADD_FAILURE() << "mtiaMallocAsync(" << size << ") returned " << mtiaGetErrorName(st) << ": "
                  << mtiaGetLastErrorMessage();
    return nullptr;
  }
  return p;
}

inline void freeOk(void* p) {
  const mtiaError_t st = mtiaFree(p);
  if (st != mtiaSuccess) ADD_FAILURE() << "mtiaFree(" << p << "): " << mtiaGetLastErrorMessage();
}

// ---- Work --------------------------------------------------------------------------------------

inline constexpr mtiaDim3 kOne{1, 1, 1};

inline mtiaFunction_t builtin(const char* name) {
  mtiaFunction_t fn = nullptr;
  if (mtiaGetBuiltinFunction(&fn, name) != mtiaSuccess) return nullptr;
  return fn;
}

// A kernel that occupies its stream for us microseconds.
inline mtiaError_t launchSleep(mtiaStream_t s, uint64_t us) {
  static const mtiaFunction_t fn = builtin("sleep_us");
  void* args[] = {&us};
  return mtiaLaunchKernel(fn, kOne, kOne, args, 0, s);
}

inline mtiaError_t launchFill(mtiaStream_t s, float* dst, float value, uint64_t n) {
  static const mtiaFunction_t fn = builtin("fill_f32");
  void* args[] = {&dst, &value, &n};
  return mtiaLaunchKernel(fn, kOne, kOne, args, 0, s);
}

// Writes a byte pattern (seeded) to device memory and checks it back.
inline void writePattern(void* dev, size_t bytes, unsigned seed) {
  std::vector<unsigned char> host(bytes);
  for (size_t i = 0; i < bytes; ++i) host[i] = static_cast<unsigned char>((i * 131u + seed * 7u) >> 3);
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

// Queues fn as a host function on s; fn is freed after it ran (or at once when the launch failed).
inline mtiaError_t launchHost(mtiaStream_t s, std::function<void()> fn) {
  auto* owned = new std::function<void()>(std::move(fn));
  const mtiaError_t st = mtiaLaunchHostFunc(
      s,
      [](void* user) {
        std::unique_ptr<std::function<void()>> f(static_cast<std::function<void()>*>(user));
        (*f)();
      },
      owned);
  if (st != mtiaSuccess) delete owned;
  return st;
}

// A host function that blocks its stream until the test opens the latch (at most kMaxBlock, so a
// forgotten latch cannot hang the process).
class Latch {
 public:
  static constexpr auto kMaxBlock = 60s;

  Latch() : state_(std::make_shared<State>()) {}
  ~Latch() { open(); }
  Latch(const Latch&) = delete;
  Latch& operator=(const Latch&) = delete;

  mtiaError_t block(mtiaStream_t s) {
    std::shared_ptr<State> st = state_;
    return launchHost(s, [st] {
      std::unique_lock lock(st->mu);
      ++st->entered;
      st->cv.notify_all();
      st->cv.wait_for(lock, kMaxBlock, [&] { return st->open; });
    });
  }
  void open() {
    std::lock_guard lock(state_->mu);
    state_->open = true;
    state_->cv.notify_all();
  }
  bool waitEntered(int n = 1, Clock::duration timeout = kHang) {
    std::unique_lock lock(state_->mu);
    return state_->cv.wait_for(lock, timeout, [&] { return state_->entered >= n; });
  }

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    bool open = false;
    int entered = 0;
  };
  std::shared_ptr<State> state_;
};

// Polls until pred() holds; false when timeout passed first.
inline bool eventually(const std::function<bool()>& pred, Clock::duration timeout = kHang) {
  const auto deadline = Clock::now() + timeout;
  while (!pred()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

inline pid_t currentTid() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

// The kernel's scheduling state of thread tid of this process ('R' running, 'S' sleeping, ...), or 0.
inline char threadState(pid_t tid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%d/stat", static_cast<int>(tid));
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return 0;
  char line[512] = {};
  const bool read = std::fgets(line, sizeof line, f) != nullptr;
  std::fclose(f);
  const char* close = read ? std::strrchr(line, ')') : nullptr;
  return close != nullptr && close[1] == ' ' ? close[2] : 0;
}

// A call on a thread of its own: the test can see whether it returned, and whether it is blocked
// (asleep in the kernel for several looks in a row).
class Call {
 public:
  explicit Call(std::function<void()> fn) : state_(std::make_shared<State>()) {
    std::shared_ptr<State> st = state_;
    thread_ = std::thread([st, fn = std::move(fn)] {
      st->tid.store(currentTid());
      fn();
      std::lock_guard lock(st->mu);
      st->done = true;
      st->cv.notify_all();
    });
  }
  ~Call() {
    if (!waitFor(kHang)) {
      std::fprintf(stderr, "a runtime call did not return: aborting\n");
      std::abort();
    }
    thread_.join();
  }
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  bool waitFor(Clock::duration timeout) {
    std::unique_lock lock(state_->mu);
    return state_->cv.wait_for(lock, timeout, [&] { return state_->done; });
  }
  bool done() { return waitFor(0s); }
  // True once the call is blocked (asleep in the kernel three looks in a row); false when it returned
  // first or timeout passed.
  bool waitBlocked(Clock::duration timeout = kHang) {
    int asleep = 0;
    const auto deadline = Clock::now() + timeout;
    while (asleep < 3) {
      if (done() || Clock::now() > deadline) return false;
      const pid_t tid = state_->tid.load();
      asleep = tid != 0 && threadState(tid) == 'S' ? asleep + 1 : 0;
      std::this_thread::sleep_for(20ms);
    }
    return true;
  }

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    std::atomic<pid_t> tid{0};
  };
  std::shared_ptr<State> state_;
  std::thread thread_;
};

// ---- Fixture -------------------------------------------------------------------------------------

// Every test starts with the devices idle and the default pools' caches emptied, so statistics deltas
// and segment counts are the test's own.
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
