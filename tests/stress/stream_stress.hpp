// A randomized multi-threaded workout of streams and events (streams-graphs-anchors.md (c), item
// 91), shared by the stress test and the Concurrency conformance suite. Uses only the public
// header.
//
// Every thread runs a fixed number of operations (fixed seed per thread, so the operation count
// never depends on time) on a shared pool of stream and event slots: create/destroy stream,
// create/destroy event, record, stream-wait-event, query, synchronize, host function, noop kernel,
// short sleep kernel. A slot is owned by whoever swaps a handle out of it (only that thread
// destroys it), but any thread may still be using a handle it read just before, and threads also
// reuse handles they saw a while ago (long destroyed, perhaps), so mtiaErrorInvalidHandle is the
// one acceptable failure of an operation on a handle from the pool; anything else is reported. At
// the end every device is synchronized, and every host function whose launch succeeded must have
// run exactly once (and none whose launch failed).
#pragma once

#include <mtia/mtia.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace mtia_stress {

struct Options {
    int threads = 16;
    int opsPerThread = 3000;
    uint32_t seed = 91;
    int slotsPerDevice = 6;  // stream slots and event slots, each, per device
    // Aborts the process (with a note) when the run takes longer: a deadlock, not slowness.
    std::chrono::seconds watchdog{240};
};

enum Op {
    kCreateStream,
    kDestroyStream,
    kCreateEvent,
    kDestroyEvent,
    kRecord,
    kWait,
    kStreamQuery,
    kEventQuery,
    kStreamSync,
    kEventSync,
    kHostFunc,
    kNoop,
    kSleep,
    kOpCount
};

inline const char* opName(int op) {
    static const char* const names[kOpCount] = {
        "create stream", "destroy stream", "create event", "destroy event", "record",
        "wait event",    "stream query",   "event query",  "stream sync",   "event sync",
        "host func",     "noop kernel",    "sleep kernel"};
    return names[op];
}

struct Report {
    uint64_t ops = 0;
    uint64_t invalidHandle =
        0;  // operations refused because another thread had destroyed the handle
    uint64_t hostFuncsLaunched = 0;
    std::array<uint64_t, kOpCount> perOp{};
    std::vector<std::string>
        failures;  // unexpected statuses and broken invariants (the first ones)
};

namespace detail {

inline void countRun(void* counter) {
    static_cast<std::atomic<uint32_t>*>(counter)->fetch_add(1);
}

class Runner {
public:
    explicit Runner(const Options& o) : o_(o) {
        int count = 0;
        mtiaGetDeviceCount(&count);
        devices_ = count >= 2 ? 2 : 1;
        const int slots = o.slotsPerDevice * devices_;
        streams_ = std::vector<std::atomic<mtiaStream_t>>(slots);
        events_ = std::vector<std::atomic<mtiaEvent_t>>(slots);
        for (auto& s : streams_) s = nullptr;
        for (auto& e : events_) e = nullptr;
        const size_t total = static_cast<size_t>(o.threads) * o.opsPerThread;
        ran_ = std::make_unique<std::atomic<uint32_t>[]>(total);
        for (size_t i = 0; i < total; ++i) ran_[i] = 0;
        launched_.assign(total, 0);
    }

    Report run() {
        std::vector<Report> perThread(o_.threads);
        std::atomic<bool> finished{false};
        std::mutex mu;
        std::condition_variable cv;
        std::thread watchdog([&] {
            std::unique_lock lock(mu);
            if (!cv.wait_for(lock, o_.watchdog, [&] { return finished.load(); })) {
                std::fprintf(stderr, "stream stress: not finished after %lld s: deadlock?\n",
                             static_cast<long long>(o_.watchdog.count()));
                std::abort();
            }
        });
        std::vector<std::thread> threads;
        for (int t = 0; t < o_.threads; ++t)
            threads.emplace_back([this, t, &perThread] { worker(t, perThread[t]); });
        for (auto& t : threads) t.join();

        Report report;
        for (const Report& r : perThread) {
            report.ops += r.ops;
            report.invalidHandle += r.invalidHandle;
            report.hostFuncsLaunched += r.hostFuncsLaunched;
            for (int i = 0; i < kOpCount; ++i) report.perOp[i] += r.perOp[i];
            for (const std::string& f : r.failures)
                if (report.failures.size() < 20) report.failures.push_back(f);
        }
        finish(report);
        {
            std::lock_guard lock(mu);
            finished = true;
        }
        cv.notify_all();
        watchdog.join();
        return report;
    }

private:
    static constexpr std::array<int, kOpCount> kWeights = {5, 4, 5, 4,  14, 12, 7,
                                                           7, 3, 3, 16, 14, 6};

    static void fail(Report& r, const std::string& what, mtiaError_t st) {
        if (r.failures.size() >= 20) return;
        r.failures.push_back(what + ": " + mtiaGetErrorName(st) + " (" + mtiaGetLastErrorMessage() +
                             ")");
    }

    // Success is always fine; NotReady where the call is a query; InvalidHandle where a handle came
    // from the pool (another thread may have destroyed it), unless stillLive() says the handle it
    // named was in its slot before and after the call: only the thread that takes a handle out of
    // its slot destroys it, and fresh handles never repeat a value, so such a handle was live
    // throughout.
    static void check(Report& r, int op, mtiaError_t st, bool pooledHandle, bool query = false,
                      const std::function<bool()>& stillLive = {}) {
        if (st == mtiaSuccess || (query && st == mtiaErrorNotReady)) return;
        if (pooledHandle && st == mtiaErrorInvalidHandle) {
            if (stillLive && stillLive()) {
                fail(r, std::string(opName(op)) + " rejected a live handle", st);
                return;
            }
            ++r.invalidHandle;
            return;
        }
        fail(r, opName(op), st);
    }

    template <typename Handle>
    static bool inSlot(const std::atomic<Handle>& slot, Handle h) {
        return h != nullptr && slot.load() == h;
    }

    // A handle from the pool: usually what the slot holds now, sometimes one this thread saw
    // earlier.
    template <typename Handle>
    static Handle choose(std::atomic<Handle>& slot, std::array<Handle, 8>& seen,
                         std::mt19937& rng) {
        Handle h = slot.load();
        if (h != nullptr) seen[rng() % seen.size()] = h;
        if (rng() % 4 == 0) {
            if (Handle old = seen[rng() % seen.size()]) return old;
        }
        return h;
    }

    void worker(int t, Report& r) {
        std::mt19937 rng(o_.seed + 7919u * static_cast<uint32_t>(t));
        std::array<mtiaStream_t, 8> seenStreams{};
        std::array<mtiaEvent_t, 8> seenEvents{};
        int totalWeight = 0;
        for (int w : kWeights) totalWeight += w;
        const uint32_t perDevice = static_cast<uint32_t>(o_.slotsPerDevice);
        for (int i = 0; i < o_.opsPerThread; ++i) {
            int pick = static_cast<int>(rng() % static_cast<uint32_t>(totalWeight));
            int op = 0;
            while (pick >= kWeights[op]) pick -= kWeights[op++];
            const int dev = static_cast<int>(rng() % static_cast<uint32_t>(devices_));
            const size_t slot = (rng() % perDevice) * devices_ + dev;  // a slot of device dev
            const size_t other = rng() % streams_.size();              // a slot of any device
            ++r.ops;
            ++r.perOp[op];
            const mtiaError_t devSt = mtiaSetDevice(dev);
            if (devSt != mtiaSuccess) fail(r, "mtiaSetDevice", devSt);
            // A NULL stream from an empty slot is the device's current (default) stream: always
            // valid.
            const mtiaStream_t s = choose(streams_[slot], seenStreams, rng);
            const bool sWasPooled = inSlot(streams_[slot], s);
            auto streamLive = [&] { return sWasPooled && inSlot(streams_[slot], s); };
            switch (op) {
            case kCreateStream: {
                mtiaStream_t fresh = nullptr;
                const int priority =
                    -static_cast<int>(rng() % 7);  // includes out-of-range values (clamped)
                const mtiaError_t st = mtiaStreamCreateWithPriority(&fresh, rng() % 2, priority);
                if (st != mtiaSuccess) {
                    fail(r, "mtiaStreamCreateWithPriority", st);
                    break;
                }
                if (mtiaStream_t old = streams_[slot].exchange(fresh)) {
                    const mtiaError_t d = mtiaStreamDestroy(old);  // owned: must succeed
                    if (d != mtiaSuccess) fail(r, "mtiaStreamDestroy of a replaced stream", d);
                }
                break;
            }
            case kDestroyStream:
                if (mtiaStream_t old = streams_[slot].exchange(nullptr)) {
                    const mtiaError_t d = mtiaStreamDestroy(old);
                    if (d != mtiaSuccess) fail(r, "mtiaStreamDestroy of an owned stream", d);
                }
                break;
            case kCreateEvent: {
                mtiaEvent_t fresh = nullptr;
                const unsigned flags = rng() % 4;  // default, blocking sync, disable timing, both
                const mtiaError_t st = mtiaEventCreateWithFlags(&fresh, flags);
                if (st != mtiaSuccess) {
                    fail(r, "mtiaEventCreateWithFlags", st);
                    break;
                }
                if (mtiaEvent_t old = events_[slot].exchange(fresh)) {
                    const mtiaError_t d = mtiaEventDestroy(old);
                    if (d != mtiaSuccess) fail(r, "mtiaEventDestroy of a replaced event", d);
                }
                break;
            }
            case kDestroyEvent:
                if (mtiaEvent_t old = events_[slot].exchange(nullptr)) {
                    const mtiaError_t d = mtiaEventDestroy(old);
                    if (d != mtiaSuccess) fail(r, "mtiaEventDestroy of an owned event", d);
                }
                break;
            case kRecord:  // event and stream of the same device
                if (mtiaEvent_t e =
                        choose(events_[(rng() % perDevice) * devices_ + dev], seenEvents, rng))
                    check(r, op, mtiaEventRecord(e, s), true);
                break;
            case kWait:  // the event may belong to the other device
                if (mtiaEvent_t e = choose(events_[other], seenEvents, rng)) {
                    const bool eWasPooled = inSlot(events_[other], e);
                    check(r, op, mtiaStreamWaitEvent(s, e, 0), true, false,
                          [&] { return streamLive() && eWasPooled && inSlot(events_[other], e); });
                }
                break;
            case kStreamQuery:
                check(r, op, mtiaStreamQuery(s), s != nullptr, true, streamLive);
                break;
            case kEventQuery:
                if (mtiaEvent_t e = choose(events_[other], seenEvents, rng)) {
                    const bool eWasPooled = inSlot(events_[other], e);
                    check(r, op, mtiaEventQuery(e), true, true,
                          [&] { return eWasPooled && inSlot(events_[other], e); });
                }
                break;
            case kStreamSync:
                check(r, op, mtiaStreamSynchronize(s), s != nullptr, false, streamLive);
                break;
            case kEventSync:
                if (mtiaEvent_t e = choose(events_[other], seenEvents, rng)) {
                    const bool eWasPooled = inSlot(events_[other], e);
                    check(r, op, mtiaEventSynchronize(e), true, false,
                          [&] { return eWasPooled && inSlot(events_[other], e); });
                }
                break;
            case kHostFunc: {
                const size_t id = static_cast<size_t>(t) * o_.opsPerThread + i;
                const mtiaError_t st = mtiaLaunchHostFunc(s, countRun, &ran_[id]);
                if (st == mtiaSuccess) {
                    launched_[id] = 1;
                    ++r.hostFuncsLaunched;
                }
                check(r, op, st, s != nullptr, false, streamLive);
                break;
            }
            case kNoop: {
                static const mtiaFunction_t noop = [] {
                    mtiaFunction_t fn = nullptr;
                    mtiaGetBuiltinFunction(&fn, "noop");
                    return fn;
                }();
                const mtiaDim3 one{1, 1, 1};
                check(r, op, mtiaLaunchKernel(noop, one, one, nullptr, 0, s), s != nullptr, false,
                      streamLive);
                break;
            }
            case kSleep: {
                static const mtiaFunction_t sleepKernel = [] {
                    mtiaFunction_t fn = nullptr;
                    mtiaGetBuiltinFunction(&fn, "sleep_us");
                    return fn;
                }();
                const mtiaDim3 one{1, 1, 1};
                uint64_t us = 10 + rng() % 190;
                void* args[] = {&us};
                check(r, op, mtiaLaunchKernel(sleepKernel, one, one, args, 0, s), s != nullptr,
                      false, streamLive);
                break;
            }
            default: break;
            }
        }
    }

    // Synchronizes every device, checks the host-function counts and the pool, and empties the
    // pool.
    void finish(Report& r) {
        for (int dev = 0; dev < devices_; ++dev) {
            mtiaSetDevice(dev);
            const mtiaError_t st = mtiaDeviceSynchronize();
            if (st != mtiaSuccess) fail(r, "final mtiaDeviceSynchronize", st);
        }
        mtiaSetDevice(0);
        const size_t total = launched_.size();
        size_t wrong = 0;
        for (size_t id = 0; id < total; ++id) {
            const uint32_t runs = ran_[id].load();
            if (runs != (launched_[id] ? 1u : 0u) && ++wrong <= 5)
                r.failures.push_back("host function " + std::to_string(id) +
                                     (launched_[id] ? " (launched)" : " (refused)") + " ran " +
                                     std::to_string(runs) + " times");
        }
        if (wrong > 5)
            r.failures.push_back(std::to_string(wrong) +
                                 " host functions ran a wrong number of times");
        for (auto& slot : events_) {
            if (mtiaEvent_t e = slot.exchange(nullptr)) {
                if (const mtiaError_t st = mtiaEventQuery(e); st != mtiaSuccess)
                    fail(r, "mtiaEventQuery after mtiaDeviceSynchronize", st);
                if (const mtiaError_t st = mtiaEventDestroy(e); st != mtiaSuccess)
                    fail(r, "final mtiaEventDestroy", st);
            }
        }
        for (auto& slot : streams_) {
            if (mtiaStream_t s = slot.exchange(nullptr)) {
                if (const mtiaError_t st = mtiaStreamQuery(s); st != mtiaSuccess)
                    fail(r, "mtiaStreamQuery after mtiaDeviceSynchronize", st);
                if (const mtiaError_t st = mtiaStreamDestroy(s); st != mtiaSuccess)
                    fail(r, "final mtiaStreamDestroy", st);
            }
        }
    }

    const Options o_;
    int devices_ = 1;
    std::vector<std::atomic<mtiaStream_t>> streams_;
    std::vector<std::atomic<mtiaEvent_t>> events_;
    std::unique_ptr<std::atomic<uint32_t>[]> ran_;
    std::vector<uint8_t> launched_;  // written by the launching thread only, read after the joins
};

}  // namespace detail

inline Report runStreamStress(const Options& o = {}) {
    return detail::Runner(o).run();
}

}  // namespace mtia_stress
