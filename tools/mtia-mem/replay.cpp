#include "replay.hpp"

#include "replay_plan.hpp"

#include <mtia/mtia.h>

#include <fmt/format.h>

#include <chrono>

namespace mtia::mem {

namespace {

// The runtime's message names the call, the argument and the error code already.
void check(mtiaError_t st, const char* what) {
    if (st == mtiaSuccess) return;
    const char* message = mtiaGetLastErrorMessage();
    throw ReplayError(
        fmt::format("{} failed: {}", what, *message != '\0' ? message : mtiaGetErrorName(st)));
}

// The trace's streams as ours: 0 is the device's default stream, every other number a stream of its
// own on the trace's device.
class Streams {
public:
    Streams(int device, const std::vector<uint64_t>& ids) {
        for (uint64_t id : ids) {
            mtiaStream_t s = nullptr;
            if (id == 0) {
                check(mtiaGetDefaultStream(device, &s), "mtiaGetDefaultStream");
            } else {
                check(mtiaStreamCreate(&s), "mtiaStreamCreate");
                created_.push_back(s);
            }
            handles_.push_back(s);
        }
    }
    ~Streams() {
        for (mtiaStream_t s : created_) mtiaStreamDestroy(s);
    }
    const mtiaStream_t* handles() const { return handles_.data(); }

private:
    std::vector<mtiaStream_t> handles_;
    std::vector<mtiaStream_t> created_;
};

// Blocks still live at the end go back to the allocator, whatever ended the replay.
class Slots {
public:
    explicit Slots(uint32_t n) : p_(n, nullptr) {}
    ~Slots() {
        for (void* p : p_)
            if (p != nullptr) mtiaFree(p);
    }
    void** data() { return p_.data(); }

private:
    std::vector<void*> p_;
};

ReplayFigures replayDevice(int device, const std::vector<TraceEntry>& entries) {
    ReplayFigures f;
    f.device = device;
    ReplayPlan plan;
    try {
        plan = planReplay(entries);
    } catch (const PlanError& e) {
        throw ReplayError(fmt::format("device {}: {}", device, e.what()));
    }
    check(mtiaSetDevice(device), "mtiaSetDevice");
    check(mtiaMemoryResetPeakStats(device), "mtiaMemoryResetPeakStats");
    check(mtiaMemoryResetAccumulatedStats(device), "mtiaMemoryResetAccumulatedStats");
    Streams streams(device, plan.streams);
    Slots table(plan.slots);
    void** slot = table.data();
    const mtiaStream_t* stream = streams.handles();
    f.streams = plan.streams.size();
    f.preexisting = plan.prelude.size();

    for (const ReplayOp& op : plan.prelude) {
        const mtiaError_t st = mtiaMallocAsync(&slot[op.slot], op.size, stream[op.stream]);
        if (st == mtiaErrorMemoryAllocation)
            ++f.skippedAllocs;
        else
            check(st, "mtiaMallocAsync (a block from before the trace)");
    }

    uint64_t skippedFrees = 0;
    size_t failedAt = 0;
    mtiaError_t failed = mtiaSuccess;
    const auto start = std::chrono::steady_clock::now();
    for (size_t i = 0; i < plan.ops.size(); ++i) {
        const ReplayOp& op = plan.ops[i];
        mtiaError_t st;
        if (op.kind == ReplayOp::Alloc) {
            st = mtiaMallocAsync(&slot[op.slot], op.size, stream[op.stream]);
            if (st == mtiaErrorMemoryAllocation) {  // counted by the allocator too (num_ooms)
                slot[op.slot] = nullptr;
                ++f.skippedAllocs;
                continue;
            }
        } else {
            void*& p = slot[op.slot];
            if (p == nullptr) {  // its allocation ran out of memory (or was of 0 bytes)
                ++skippedFrees;
                continue;
            }
            st = mtiaFree(p);
            p = nullptr;
        }
        if (st != mtiaSuccess) {
            failed = st;
            failedAt = i;
            break;
        }
    }
    f.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (failed != mtiaSuccess)
        check(failed, fmt::format("device {}: replayed operation {} ({})", device, failedAt,
                                  plan.ops[failedAt].kind == ReplayOp::Alloc ? "mtiaMallocAsync"
                                                                             : "mtiaFree")
                          .c_str());
    f.ops = plan.ops.size() - skippedFrees;

    mtiaMemoryStats st = MTIA_MEMORY_STATS_INIT;
    check(mtiaMemoryGetStats(device, &st), "mtiaMemoryGetStats");
    f.peakReserved = st.reserved_bytes[mtiaStatAll].peak;
    f.peakAllocated = st.allocated_bytes[mtiaStatAll].peak;
    f.deviceAllocs = st.num_device_alloc;
    f.deviceFrees = st.num_device_free;
    f.retries = st.num_alloc_retries;
    f.ooms = st.num_ooms;
    return f;
}

}  // namespace

ReplayResult replay(const Snapshot& snap, const std::string& conf) {
    // A bad MTIA_* setting shows here with its reason, not later as "0 devices".
    check(mtiaInit(0), "starting the runtime");
    if (!conf.empty()) check(mtiaAllocatorSetConfig(conf.c_str()), "applying --conf");
    int count = 0;
    check(mtiaGetDeviceCount(&count), "mtiaGetDeviceCount");
    std::vector<int> devices;
    for (size_t d = 0; d < snap.deviceTraces.size(); ++d) {
        bool allocates = false;
        for (const TraceEntry& e : snap.deviceTraces[d])
            if (e.action == Action::Alloc || e.action == Action::FreeRequested ||
                e.action == Action::FreeCompleted) {
                allocates = true;
                break;
            }
        if (!allocates) continue;
        if (static_cast<int>(d) >= count)
            throw ReplayError(fmt::format(
                "the trace allocates on device {}, but the simulated machine has {} device(s) "
                "(MTIA_SIM_DEVICES sets how many)",
                d, count));
        devices.push_back(static_cast<int>(d));
    }
    if (devices.empty())
        throw ReplayError(
            !snap.hasTraces
                ? "the snapshot has no trace to replay (device_traces): it was taken without "
                  "recording "
                  "history (torch.cuda.memory._record_memory_history) or by PyTorch 1.13"
                : "the snapshot's traces have no allocations or frees to replay");
    ReplayResult r;
    for (int d : devices)
        r.devices.push_back(replayDevice(d, snap.deviceTraces[static_cast<size_t>(d)]));
    ReplayFigures& t = r.total;
    for (const ReplayFigures& f : r.devices) {
        t.peakReserved += f.peakReserved;
        t.peakAllocated += f.peakAllocated;
        t.deviceAllocs += f.deviceAllocs;
        t.deviceFrees += f.deviceFrees;
        t.retries += f.retries;
        t.ooms += f.ooms;
        t.ops += f.ops;
        t.seconds += f.seconds;
        t.preexisting += f.preexisting;
        t.skippedAllocs += f.skippedAllocs;
        t.streams += f.streams;
    }
    return r;
}

}  // namespace mtia::mem
