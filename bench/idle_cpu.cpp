// idle_cpu: how much CPU a stream runtime burns when it has nothing to do.
//
//   idle_cpu [--seconds=S] [--repetitions=N]      (defaults: 1 s, 3)
//
// For the reference design (bench/baseline/cv_stream.hpp) and then for the
// runtime (public C ABI only), N times: run a burst of work (empty kernels,
// timed and untimed events, a cross-stream wait, host functions) on every
// device, synchronize, then sleep S seconds and measure the process's CPU time
// (CLOCK_PROCESS_CPUTIME_ID) over the sleep. The main thread sleeps, so all of
// it is spent by the runtime's threads. The baseline goes first and is torn
// down before the runtime starts, because the runtime's threads live until
// the process exits.
//
// Prints one JSON object on stdout: per design the samples and their median,
// in percent of one core. Exit status 1 when a runtime call fails.
#include "baseline/cv_stream.hpp"

#include <mtia/mtia.h>

#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using mtia::bench::baseline::CvEvent;
using mtia::bench::baseline::CvStream;

constexpr int kKernels = 1000;
constexpr int kHostFuncs = 10;

#define CHECK(call)                                                                                \
    do {                                                                                           \
        const mtiaError_t st_ = (call);                                                            \
        if (st_ != mtiaSuccess) {                                                                  \
            std::fprintf(stderr, "idle_cpu: %s returned %s: %s\n", #call, mtiaGetErrorName(st_),   \
                         mtiaGetLastErrorMessage());                                               \
            std::exit(1);                                                                          \
        }                                                                                          \
    } while (0)

double processCpuSeconds() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Percent of one core the process used while the calling thread slept for seconds.
double idlePercent(double seconds) {
    const double cpu0 = processCpuSeconds();
    const auto wall0 = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    const double cpu1 = processCpuSeconds();
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    return 100.0 * (cpu1 - cpu0) / wall;
}

void countCall(void* counter) {
    static_cast<std::atomic<int>*>(counter)->fetch_add(1, std::memory_order_relaxed);
}

std::vector<double> measureBaseline(double seconds, int repetitions) {
    std::vector<double> samples;
    CvStream a, b;
    CvEvent timed(true), untimed(false);
    std::atomic<int> calls{0};
    for (int r = 0; r < repetitions; ++r) {
        for (int i = 0; i < kKernels; ++i) a.enqueue([] {});
        timed.record(a);
        untimed.record(a);
        untimed.streamWait(b);
        for (int i = 0; i < kHostFuncs; ++i) launchHostFunc(b, countCall, &calls);
        timed.record(b);
        a.synchronize();
        b.synchronize();
        timed.synchronize();
        samples.push_back(idlePercent(seconds));
    }
    return samples;
}

std::vector<double> measureOurs(double seconds, int repetitions) {
    int devices = 0;
    CHECK(mtiaGetDeviceCount(&devices));
    if (devices == 0) {
        std::fprintf(stderr, "idle_cpu: no device\n");
        std::exit(1);
    }
    struct PerDevice {
        mtiaStream_t a = nullptr, b = nullptr;
        mtiaEvent_t timed = nullptr, untimed = nullptr;
    };
    std::vector<PerDevice> per(static_cast<size_t>(devices));
    for (int d = 0; d < devices; ++d) {
        PerDevice& p = per[static_cast<size_t>(d)];
        CHECK(mtiaSetDevice(d));
        CHECK(mtiaStreamCreate(&p.a));
        CHECK(mtiaStreamCreate(&p.b));
        CHECK(mtiaEventCreate(&p.timed));
        CHECK(mtiaEventCreateWithFlags(&p.untimed, mtiaEventDisableTiming));
    }
    mtiaFunction_t noop = nullptr;
    CHECK(mtiaGetBuiltinFunction(&noop, "noop"));
    const mtiaDim3 one = {1, 1, 1};
    std::atomic<int> calls{0};
    std::vector<double> samples;
    for (int r = 0; r < repetitions; ++r) {
        for (int d = 0; d < devices; ++d) {
            PerDevice& p = per[static_cast<size_t>(d)];
            CHECK(mtiaSetDevice(d));
            for (int i = 0; i < kKernels; ++i)
                CHECK(mtiaLaunchKernel(noop, one, one, nullptr, 0, p.a));
            CHECK(mtiaEventRecord(p.timed, p.a));
            CHECK(mtiaEventRecord(p.untimed, p.a));
            CHECK(mtiaStreamWaitEvent(p.b, p.untimed, mtiaEventWaitDefault));
            for (int i = 0; i < kHostFuncs; ++i) CHECK(mtiaLaunchHostFunc(p.b, countCall, &calls));
            CHECK(mtiaEventRecord(p.timed, p.b));
        }
        for (int d = 0; d < devices; ++d) {
            CHECK(mtiaSetDevice(d));
            CHECK(mtiaDeviceSynchronize());
        }
        samples.push_back(idlePercent(seconds));
    }
    for (PerDevice& p : per) {
        CHECK(mtiaEventDestroy(p.timed));
        CHECK(mtiaEventDestroy(p.untimed));
        CHECK(mtiaStreamDestroy(p.a));
        CHECK(mtiaStreamDestroy(p.b));
    }
    return samples;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

std::string json(const std::vector<double>& samples) {
    std::string s = "{\"samples\": [";
    char buf[64];
    for (size_t i = 0; i < samples.size(); ++i) {
        std::snprintf(buf, sizeof(buf), "%s%.4f", i == 0 ? "" : ", ", samples[i]);
        s += buf;
    }
    std::snprintf(buf, sizeof(buf), "], \"median\": %.4f}", median(samples));
    return s + buf;
}

[[noreturn]] void usage() {
    std::fprintf(stderr, "usage: idle_cpu [--seconds=S] [--repetitions=N]  (S > 0, N >= 1)\n");
    std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
    double seconds = 1.0;
    int repetitions = 3;
    for (int i = 1; i < argc; ++i) {
        const char* arg = argv[i];
        char* end = nullptr;
        if (std::strncmp(arg, "--seconds=", 10) == 0) {
            seconds = std::strtod(arg + 10, &end);
            if (end == arg + 10 || *end != '\0' || !(seconds > 0)) usage();
        } else if (std::strncmp(arg, "--repetitions=", 14) == 0) {
            const long n = std::strtol(arg + 14, &end, 10);
            if (end == arg + 14 || *end != '\0' || n < 1 || n > 1000) usage();
            repetitions = static_cast<int>(n);
        } else {
            usage();
        }
    }
    CHECK(mtiaInit(mtiaInitDefault));
    const std::vector<double> baseline = measureBaseline(seconds, repetitions);
    const std::vector<double> ours = measureOurs(seconds, repetitions);
    std::printf("{\"unit\": \"percent of one core\", \"seconds\": %.3f, \"repetitions\": %d,\n",
                seconds, repetitions);
    std::printf(" \"ours\": %s,\n", json(ours).c_str());
    std::printf(" \"baseline\": %s}\n", json(baseline).c_str());
    return 0;
}
