// Shared pieces of the stream/event conformance tests: status assertions that
// print error names and the last-error message, RAII owners of streams,
// events and device memory, a latch that blocks a stream from a host
// function, and helpers that turn "this call hangs" into a test failure
// instead of a hung test. Uses only the public header.
#pragma once

#include <gtest/gtest.h>
#include <mtia/mtia.h>
#include <time.h>
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

namespace mtia_test {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// How long a wait may take before it counts as a hang (generous: loaded machines, sanitizers).
inline constexpr Clock::duration kHang = 20s;
// How long to watch for something that must not happen (a blocked stream finishing, a call returning).
inline constexpr Clock::duration kSettle = 100ms;

// ---- Status assertions -------------------------------------------------------------------------

inline ::testing::AssertionResult statusIs(const char* /*wantExpr*/, const char* callExpr, mtiaError_t want,
                                           mtiaError_t got) {
  if (got == want) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << callExpr << " returned " << mtiaGetErrorName(got) << " (" << got
                                       << "), expected " << mtiaGetErrorName(want) << " (" << want
                                       << ")\n  last error message: " << mtiaGetLastErrorMessage();
}

#define EXPECT_STATUS(want, call) EXPECT_PRED_FORMAT2(::mtia_test::statusIs, want, call)
#define ASSERT_STATUS(want, call) ASSERT_PRED_FORMAT2(::mtia_test::statusIs, want, call)
#define EXPECT_OK(call) EXPECT_STATUS(mtiaSuccess, call)
#define ASSERT_OK(call) ASSERT_STATUS(mtiaSuccess, call)

// The function a call expression calls: "mtiaStreamCreate" for "mtiaStreamCreate (nullptr)".
inline std::string calledFunction(const char* callExpr) {
  std::string call(callExpr);
  call = call.substr(0, call.find('('));
  while (!call.empty() && call.back() == ' ') call.pop_back();
  return call;
}

// The call failed with want and the thread's last-error message names the function and the argument.
inline ::testing::AssertionResult failsNaming(const char* /*wantExpr*/, const char* callExpr, const char* /*argExpr*/,
                                              mtiaError_t want, mtiaError_t got, const char* arg) {
  ::testing::AssertionResult status = statusIs("", callExpr, want, got);
  if (!status) return status;
  const std::string message = mtiaGetLastErrorMessage();
  const std::string call = calledFunction(callExpr);
  if (message.empty()) return ::testing::AssertionFailure() << callExpr << ": the last error message is empty";
  if (message.find(call) == std::string::npos)
    return ::testing::AssertionFailure() << callExpr << ": the message does not name " << call << ": " << message;
  if (message.find(arg) == std::string::npos)
    return ::testing::AssertionFailure() << callExpr << ": the message does not name '" << arg << "': " << message;
  return ::testing::AssertionSuccess();
}

// EXPECT_FAILS(mtiaErrorInvalidValue, mtiaStreamCreate(nullptr), "stream")
#define EXPECT_FAILS(want, call, arg) EXPECT_PRED_FORMAT3(::mtia_test::failsNaming, want, call, arg)

// ---- Devices -------------------------------------------------------------------------------------

inline int deviceCount() {
  int n = 0;
  return mtiaGetDeviceCount(&n) == mtiaSuccess ? n : 0;
}

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

// Polls until pred() holds; false when timeout passed first.
inline bool eventually(const std::function<bool()>& pred, Clock::duration timeout = kHang) {
  const auto deadline = Clock::now() + timeout;
  while (!pred()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// Waits (bounded) until the stream has no pending work; the status of the last query.
inline mtiaError_t drain(mtiaStream_t s, Clock::duration timeout = kHang) {
  mtiaError_t st = mtiaErrorNotReady;
  eventually([&] { return (st = mtiaStreamQuery(s)) != mtiaErrorNotReady; }, timeout);
  return st;
}

// ---- Owners --------------------------------------------------------------------------------------

// A stream created on a device. The destructor first waits (bounded) for the stream's work so that
// host functions never outlive what they refer to, then destroys it.
class Stream {
 public:
  explicit Stream(int dev = 0, unsigned flags = mtiaStreamDefault, int priority = 0) {
    DeviceScope scope(dev);
    status_ = mtiaStreamCreateWithPriority(&s_, flags, priority);
    if (status_ != mtiaSuccess) s_ = nullptr;
  }
  ~Stream() {
    if (s_ == nullptr) return;
    drain(s_);
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

class Event {
 public:
  explicit Event(unsigned flags = mtiaEventDefault, int dev = 0) {
    DeviceScope scope(dev);
    status_ = mtiaEventCreateWithFlags(&e_, flags);
    if (status_ != mtiaSuccess) e_ = nullptr;
  }
  ~Event() {
    if (e_ != nullptr) mtiaEventDestroy(e_);
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  mtiaError_t status() const { return status_; }
  mtiaEvent_t get() const { return e_; }
  operator mtiaEvent_t() const { return e_; }

 private:
  mtiaEvent_t e_ = nullptr;
  mtiaError_t status_ = mtiaErrorUnknown;
};

// count floats of device memory on dev.
class DeviceFloats {
 public:
  DeviceFloats(size_t count, int dev = 0) : count_(count) {
    DeviceScope scope(dev);
    void* p = nullptr;
    status_ = mtiaMalloc(&p, count * sizeof(float));
    p_ = static_cast<float*>(p);
  }
  ~DeviceFloats() {
    if (p_ != nullptr) mtiaFree(p_);
  }
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

// ---- Work --------------------------------------------------------------------------------------

inline constexpr mtiaDim3 kOne{1, 1, 1};

inline mtiaFunction_t builtin(const char* name) {
  mtiaFunction_t fn = nullptr;
  if (mtiaGetBuiltinFunction(&fn, name) != mtiaSuccess) return nullptr;
  return fn;
}

// Looked up once per process (runtime calls are not permitted inside host functions).
inline mtiaFunction_t noopKernel() {
  static const mtiaFunction_t fn = builtin("noop");
  return fn;
}

inline mtiaError_t launchNoop(mtiaStream_t s) { return mtiaLaunchKernel(noopKernel(), kOne, kOne, nullptr, 0, s); }

// A kernel that occupies its engine for us microseconds.
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

inline mtiaError_t launchCopy(mtiaStream_t s, float* dst, const float* src, uint64_t n) {
  static const mtiaFunction_t fn = builtin("copy_f32");
  void* args[] = {&dst, &src, &n};
  return mtiaLaunchKernel(fn, kOne, kOne, args, 0, s);
}

inline mtiaError_t launchScale(mtiaStream_t s, float* out, const float* a, float k, uint64_t n) {
  static const mtiaFunction_t fn = builtin("scale_f32");
  void* args[] = {&out, &a, &k, &n};
  return mtiaLaunchKernel(fn, kOne, kOne, args, 0, s);
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

// Copies n floats of device memory back with the synchronous mtiaMemcpy (empty on failure, which is
// reported as a test failure).
inline std::vector<float> readBack(const float* d, size_t n) {
  std::vector<float> host(n, -12345.0f);
  const mtiaError_t st = mtiaMemcpy(host.data(), d, n * sizeof(float), mtiaMemcpyDeviceToHost);
  if (st != mtiaSuccess) {
    ADD_FAILURE() << "mtiaMemcpy(D2H) returned " << mtiaGetErrorName(st) << ": " << mtiaGetLastErrorMessage();
    return {};
  }
  return host;
}

// Whether every element of v equals want (and v has n elements).
inline ::testing::AssertionResult allEqual(const std::vector<float>& v, size_t n, float want) {
  if (v.size() != n) return ::testing::AssertionFailure() << "got " << v.size() << " values, expected " << n;
  for (size_t i = 0; i < n; ++i)
    if (v[i] != want)
      return ::testing::AssertionFailure() << "element " << i << " is " << v[i] << ", expected " << want;
  return ::testing::AssertionSuccess();
}

// ---- Latch: a host function that blocks its stream until the test opens it ------------------------

class Latch {
 public:
  // How long a blocked host function waits at most, so a forgotten latch cannot hang the process.
  static constexpr auto kMaxBlock = 60s;

  Latch() : state_(std::make_shared<State>()) {}
  ~Latch() { open(); }
  Latch(const Latch&) = delete;
  Latch& operator=(const Latch&) = delete;

  // Queues on s a host function that runs onEnter (if any), then blocks until open().
  mtiaError_t block(mtiaStream_t s, std::function<void()> onEnter = {}) {
    std::shared_ptr<State> st = state_;
    return launchHost(s, [st, onEnter = std::move(onEnter)] {
      if (onEnter) onEnter();
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
  // Waits until n host functions of this latch have started blocking.
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

// ---- Calls that might hang -----------------------------------------------------------------------

// Runs fn on its own thread. If the owner goes away while fn still runs, unblock() runs first (say,
// opening a latch) so the join cannot hang; if fn still does not return within kHang after that, the
// runtime has hung for good and the process aborts with a note, so the test fails instead of hanging
// until the test runner's timeout.
class Async {
 public:
  explicit Async(std::function<void()> fn, std::function<void()> unblock = {})
      : done_(std::make_shared<Done>()), unblock_(std::move(unblock)) {
    std::shared_ptr<Done> d = done_;
    thread_ = std::thread([d, fn = std::move(fn)] {
      fn();
      std::lock_guard lock(d->mu);
      d->done = true;
      d->cv.notify_all();
    });
  }
  ~Async() {
    if (!waitFor(0s) && unblock_) unblock_();
    if (!waitFor(kHang)) {
      std::fprintf(stderr, "a runtime call did not return even after its work was unblocked: aborting\n");
      std::abort();
    }
    thread_.join();
  }
  Async(const Async&) = delete;
  Async& operator=(const Async&) = delete;

  bool done() { return waitFor(0s); }
  bool waitFor(Clock::duration timeout) {
    std::unique_lock lock(done_->mu);
    return done_->cv.wait_for(lock, timeout, [&] { return done_->done; });
  }

 private:
  struct Done {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
  };
  std::shared_ptr<Done> done_;
  std::function<void()> unblock_;
  std::thread thread_;
};

// The kernel's scheduling state of thread tid of this process ('R' running, 'S' sleeping, ...), or 0.
inline char threadState(pid_t tid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%d/stat", static_cast<int>(tid));
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return 0;
  char line[512] = {};
  const bool read = std::fgets(line, sizeof line, f) != nullptr;
  std::fclose(f);
  const char* close = read ? std::strrchr(line, ')') : nullptr;  // the name may hold spaces and ')'
  return close != nullptr && close[1] == ' ' ? close[2] : 0;
}

// Waits until thread tid has been asleep in the kernel for a few looks in a row (it is blocked, not
// just descheduled); false when that did not happen within timeout.
inline bool waitUntilAsleep(pid_t tid, Clock::duration timeout = kHang) {
  int asleep = 0;
  const auto deadline = Clock::now() + timeout;
  while (asleep < 3) {
    if (Clock::now() > deadline) return false;
    asleep = threadState(tid) == 'S' ? asleep + 1 : 0;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

// Whether fn returns within timeout. If it does not, unblock() runs and fn is joined.
inline bool returnsWithin(Clock::duration timeout, std::function<void()> fn, std::function<void()> unblock = {}) {
  Async call(std::move(fn), std::move(unblock));
  return call.waitFor(timeout);
}

// ---- Process measurements ------------------------------------------------------------------------

inline Clock::duration threadCpuTime() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

// Resident set size of the process in bytes (from /proc/self/statm).
inline int64_t residentBytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return -1;
  long long size = 0, resident = 0;
  const int n = std::fscanf(f, "%lld %lld", &size, &resident);
  std::fclose(f);
  return n == 2 ? static_cast<int64_t>(resident) * sysconf(_SC_PAGESIZE) : -1;
}

// Whether a sanitizer that keeps freed memory around (ASan's quarantine) or wraps the allocator is
// built in: resident-memory growth then says nothing about the runtime.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

inline double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

}  // namespace mtia_test
