// The reference design the stream benchmarks compare against: one worker
// thread per stream, fed through a std::mutex + std::condition_variable queue
// of std::function (the design of a typical simulated accelerator runtime).
//
//   enqueue            lock, push the task, unlock, notify_one
//   worker             waits on the condition variable, pops a task, runs it
//   synchronize        waits on a second condition variable until the queue
//                      is empty and the worker idle
//   event record       enqueues a task that marks the record complete (and
//                      timestamps it when the event is timed)
//   event query        reads the completion under the event's mutex
//   stream wait event  enqueues a task that blocks the worker on the event's
//                      condition variable until the record completed
//
// It is a comparison point for bench/ only, not part of the runtime: no
// error handling beyond what the benchmarks need, no priorities, no devices.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace mtia::bench::baseline {

class CvStream {
public:
    CvStream();
    // Runs what is still queued, then stops and joins the worker.
    ~CvStream();
    CvStream(const CvStream&) = delete;
    CvStream& operator=(const CvStream&) = delete;

    // Queues task; it runs on the worker after every task queued before it.
    void enqueue(std::function<void()> task);
    // Whether every task queued so far has finished.
    bool query();
    // Blocks until every task queued so far has finished.
    void synchronize();

private:
    void workerMain();

    std::mutex mu_;
    std::condition_variable workCv_;  // the worker waits here for tasks (or stop_)
    std::condition_variable
        idleCv_;  // synchronize() waits here for an empty queue and an idle worker
    std::deque<std::function<void()>> tasks_;
    bool running_ = false;  // the worker is running a task
    bool stop_ = false;
    std::thread worker_;  // last: starts once the members above exist
};

// An event: records are numbered; a record completes when the task it queued ran.
// Records of one event are assumed to complete in the order they were made (true
// when the event is recorded on one stream at a time, as in the benchmarks).
class CvEvent {
public:
    explicit CvEvent(bool timing = true);

    // Queues the completion of a new record on stream.
    void record(CvStream& stream);
    // Whether the latest record completed (true when never recorded).
    bool query() const;
    // Blocks until the latest record as of the call completed.
    void synchronize() const;
    // Completion time of the latest completed record (steady clock, ns); 0 when
    // untimed or not yet completed.
    int64_t timestampNs() const;

    // Makes stream's later tasks wait for the latest record as of this call.
    void streamWait(CvStream& stream) const;

private:
    struct State {
        std::mutex mu;
        std::condition_variable cv;
        uint64_t recorded = 0;   // records made
        uint64_t completed = 0;  // records completed
        int64_t timestampNs = 0;
    };
    static void waitFor(State& state, uint64_t record);

    bool timing_;
    std::shared_ptr<State> state_;  // shared with the tasks still queued
};

// Queues fn(userData) on stream, as a host function.
void launchHostFunc(CvStream& stream, void (*fn)(void*), void* userData);

}  // namespace mtia::bench::baseline
