#include "replay.hpp"

#include <mtia/mtia.h>

#include <fmt/format.h>

#include <chrono>
#include <unordered_map>

namespace mtia::mem {

namespace {

void check(mtiaError_t st, const char* what) {
  if (st != mtiaSuccess)
    throw ReplayError(fmt::format("{} failed: {} ({})", what, mtiaGetLastErrorMessage(), mtiaGetErrorName(st)));
}

// The trace's streams as our streams: 0 is the device's default stream, every other number a stream of
// its own.
class StreamMap {
 public:
  explicit StreamMap(int device) : device_(device) {}
  ~StreamMap() {
    for (auto& [id, s] : created_) mtiaStreamDestroy(s);
  }
  mtiaStream_t get(uint64_t id) {
    if (auto it = streams_.find(id); it != streams_.end()) return it->second;
    mtiaStream_t s = nullptr;
    if (id == 0) {
      check(mtiaGetDefaultStream(device_, &s), "mtiaGetDefaultStream");
    } else {
      check(mtiaStreamCreate(&s), "mtiaStreamCreate");
      created_.emplace(id, s);
    }
    streams_.emplace(id, s);
    return s;
  }

 private:
  int device_;
  std::unordered_map<uint64_t, mtiaStream_t> streams_;
  std::unordered_map<uint64_t, mtiaStream_t> created_;
};

ReplayFigures replayDevice(int device, const std::vector<TraceEntry>& entries) {
  ReplayFigures f;
  f.device = device;
  check(mtiaSetDevice(device), "mtiaSetDevice");
  check(mtiaMemoryResetPeakStats(device), "mtiaMemoryResetPeakStats");
  check(mtiaMemoryResetAccumulatedStats(device), "mtiaMemoryResetAccumulatedStats");
  StreamMap streams(device);
  for (const TraceEntry& e : entries)
    if (e.action == Action::Alloc) streams.get(e.stream);  // create streams outside the timed loop
  std::unordered_map<uint64_t, void*> live;
  live.reserve(entries.size());
  auto release = [&](std::unordered_map<uint64_t, void*>::iterator it) {
    check(mtiaFree(it->second), "mtiaFree");
    live.erase(it);
    ++f.ops;
  };
  const auto start = std::chrono::steady_clock::now();
  for (const TraceEntry& e : entries) {
    switch (e.action) {
      case Action::Alloc: {
        if (auto it = live.find(e.addr); it != live.end()) release(it);  // its free fell out of the trace
        void* p = nullptr;
        const mtiaError_t st = mtiaMallocAsync(&p, e.size, streams.get(e.stream));
        ++f.ops;
        if (st == mtiaErrorMemoryAllocation) continue;  // counted by the allocator (num_ooms)
        check(st, "mtiaMallocAsync");
        if (p != nullptr) live.emplace(e.addr, p);
        break;
      }
      case Action::FreeRequested:
      case Action::FreeCompleted: {
        // The free happens at the request; a trace holding only completions frees there.
        auto it = live.find(e.addr);
        if (it != live.end())
          release(it);
        else if (e.action == Action::FreeRequested)
          ++f.unknownFrees;
        break;
      }
      default:
        break;  // the recorded allocator's own decisions (segments, snapshots, OOMs) are not ours to copy
    }
  }
  f.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  mtiaMemoryStats st = MTIA_MEMORY_STATS_INIT;
  check(mtiaMemoryGetStats(device, &st), "mtiaMemoryGetStats");
  f.peakReserved = st.reserved_bytes[mtiaStatAll].peak;
  f.peakAllocated = st.allocated_bytes[mtiaStatAll].peak;
  f.deviceAllocs = st.num_device_alloc;
  f.deviceFrees = st.num_device_free;
  f.retries = st.num_alloc_retries;
  f.ooms = st.num_ooms;
  for (auto& [addr, p] : live) mtiaFree(p);
  check(mtiaDeviceSynchronize(), "mtiaDeviceSynchronize");
  return f;
}

}  // namespace

ReplayResult replay(const Snapshot& snap, const std::string& conf) {
  if (!conf.empty()) check(mtiaAllocatorSetConfig(conf.c_str()), "applying --conf");
  int count = 0;
  check(mtiaGetDeviceCount(&count), "mtiaGetDeviceCount");
  ReplayResult r;
  for (size_t d = 0; d < snap.deviceTraces.size(); ++d) {
    if (snap.deviceTraces[d].empty()) continue;
    if (static_cast<int>(d) >= count)
      throw ReplayError(fmt::format("the trace has allocations on device {}, but the simulated machine has {} "
                                    "device(s) (set MTIA_SIM_DEVICES)",
                                    d, count));
    r.devices.push_back(replayDevice(static_cast<int>(d), snap.deviceTraces[d]));
  }
  for (const ReplayFigures& f : r.devices) {
    r.total.peakReserved += f.peakReserved;
    r.total.peakAllocated += f.peakAllocated;
    r.total.deviceAllocs += f.deviceAllocs;
    r.total.deviceFrees += f.deviceFrees;
    r.total.retries += f.retries;
    r.total.ooms += f.ooms;
    r.total.ops += f.ops;
    r.total.seconds += f.seconds;
    r.total.unknownFrees += f.unknownFrees;
  }
  return r;
}

}  // namespace mtia::mem
