#include "allocator/history/snapshot_assembly.hpp"

#include "allocator/history/stacks/symbolizer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <unordered_map>
#include <utility>

namespace mtia::allocator {

namespace {

// One stack id per distinct context content (C++ addresses and framework id): allocations made in a
// loop share one, whatever the number of contexts.
class StackNamer {
public:
    StackNamer(mem::StackTable& table, HistoryRecorder& history)
        : table_(table), history_(history) {}

    mem::StackId stackOf(const AllocContext* c) {
        if (c == nullptr) return 0;
        if (auto it = byContext_.find(c); it != byContext_.end()) return it->second;
        key_.assign(reinterpret_cast<const char*>(c->frames()), c->frameCount() * sizeof(void*));
        const uint64_t id = c->frameworkId();
        key_.append(reinterpret_cast<const char*>(&id), sizeof id);
        mem::StackId stack;
        if (auto it = byContent_.find(key_); it != byContent_.end()) {
            stack = it->second;
        } else {
            frames_.clear();
            for (uint32_t i = 0; i < c->frameCount(); ++i)
                frames_.push_back(native(c->frames()[i]));
            if (id != 0) history_.resolve(id, frames_);
            stack = table_.intern(frames_);
            byContent_.emplace(key_, stack);
        }
        byContext_.emplace(c, stack);
        return stack;
    }

private:
    const mem::Frame& native(void* pc) {
        if (auto it = names_.find(pc); it != names_.end()) return it->second;
        const NativeFrame& n = Symbolizer::instance().symbolize(pc);
        mem::Frame f;
        f.filename = n.module;
        f.line = 0;
        if (!n.function.empty()) {
            f.name = n.function;
        } else {  // no symbol covers it: the module and the offset in it, as addr2line would want
                  // them
            const char* slash = std::strrchr(n.module.c_str(), '/');
            f.name =
                fmt::format("{}+{:#x}", slash != nullptr ? slash + 1 : n.module.c_str(), n.offset);
        }
        return names_.emplace(pc, std::move(f)).first->second;
    }

    mem::StackTable& table_;
    HistoryRecorder& history_;
    std::unordered_map<const AllocContext*, mem::StackId> byContext_;
    std::unordered_map<std::string, mem::StackId> byContent_;
    std::unordered_map<void*, mem::Frame> names_;
    std::string key_;
    std::vector<mem::Frame> frames_;
};

// The stream number a snapshot shows: 0 for the device's default stream (PyTorch writes a device's
// default stream as its null handle, and its viewer and replay tools read 0 that way), the stream's
// own id otherwise (ids start at 1, so none is taken for the default stream by mistake).
uint64_t snapshotStream(const DeviceSnapshot& d, uint64_t stream) {
    return d.defaultStream != 0 && stream == d.defaultStream ? 0 : stream;
}

void fill(mem::Snapshot& snap, std::vector<DeviceSnapshot>& devices, int deviceCount,
          const AllocConfig& config, HistoryRecorder& history) {
    StackNamer names(snap.stacks, history);
    struct Ref {
        const DeviceSnapshot* device;
        const SnapshotSegment* segment;
    };
    std::vector<Ref> order;
    for (const DeviceSnapshot& d : devices)
        for (const SnapshotSegment& s : d.segments) order.push_back({&d, &s});
    std::sort(order.begin(), order.end(), [](const Ref& a, const Ref& b) {
        return a.segment->address != b.segment->address ? a.segment->address < b.segment->address
                                                        : a.device->device < b.device->device;
    });
    snap.segments.reserve(order.size());
    for (const Ref& ref : order) {
        const SnapshotSegment& s = *ref.segment;
        mem::Segment& out = snap.segments.emplace_back();
        out.device = ref.device->device;
        out.address = s.address;
        out.totalSize = s.totalSize;
        out.stream = snapshotStream(*ref.device, s.stream);
        out.large = s.large;
        out.expandable = s.expandable;
        out.poolId[0] = s.pool.first;
        out.poolId[1] = s.pool.second;
        out.stack = names.stackOf(s.context);
        out.blocks.reserve(s.blockCount);
        for (size_t i = s.firstBlock; i < s.firstBlock + s.blockCount; ++i) {
            const SnapshotBlock& b = ref.device->blocks[i];
            mem::Block& ob = out.blocks.emplace_back();
            ob.address = b.address;
            ob.size = b.size;
            ob.requestedSize = b.requested;
            ob.state = b.state;
            ob.stack = names.stackOf(b.context);
            if (b.state == mem::BlockState::ActiveAllocated) out.allocatedSize += b.size;
            if (b.state != mem::BlockState::Inactive) {
                out.activeSize += b.size;
                out.requestedSize += b.requested;
            }
        }
    }
    snap.hasTraces = true;
    snap.deviceTraces.resize(static_cast<size_t>(std::max(deviceCount, 0)));
    std::unordered_map<uint32_t, uint32_t> metadata;  // recorder id -> snapshot string id
    const TraceClock::Converter clock = history.clockConverter();
    for (const DeviceSnapshot& d : devices) {
        if (d.device < 0 || d.device >= deviceCount) continue;
        auto& entries = snap.deviceTraces[static_cast<size_t>(d.device)];
        entries.reserve(d.trace.size());
        for (const TraceRecord& r : d.trace) {
            mem::TraceEntry& e = entries.emplace_back();
            e.action = r.action;
            e.device = d.device;
            e.addr = r.addr;
            e.size = r.size;
            e.stream = snapshotStream(d, r.stream);
            e.timeUs = static_cast<double>(clock.epochUs(r.stamp));
            e.stack = names.stackOf(r.context);
            e.poolId[0] = r.pool.first;
            e.poolId[1] = r.pool.second;
            if (r.metadata != 0) {
                auto [it, added] = metadata.try_emplace(r.metadata, 0);
                if (added) it->second = snap.internString(history.metadataText(r.metadata));
                e.userMetadata = it->second;
            }
        }
    }
    snap.allocatorSettings = allocatorSettings(config);
    snap.externalAnnotations = history.annotations();
}

}  // namespace

void releaseSnapshotContexts(std::vector<DeviceSnapshot>& devices,
                             HistoryRecorder& history) noexcept {
    for (DeviceSnapshot& d : devices) {
        for (SnapshotSegment& s : d.segments) history.unref(std::exchange(s.context, nullptr));
        for (SnapshotBlock& b : d.blocks) history.unref(std::exchange(b.context, nullptr));
        for (TraceRecord& r : d.trace) history.unref(std::exchange(r.context, nullptr));
    }
}

mem::Value allocatorSettings(const AllocConfig& config) {
    using mem::Value;
    Value v = Value::dict();
    v.add("PYTORCH_CUDA_ALLOC_CONF", Value::of(config.format()));
    // No limit is SIZE_MAX in PyTorch; -1 here, as the snapshot keeps integers within 64 signed
    // bits.
    v.add("max_split_size", Value::of(config.maxSplitSize == AllocConfig::kUnlimited
                                          ? int64_t{-1}
                                          : static_cast<int64_t>(config.maxSplitSize)));
    v.add("garbage_collection_threshold", Value::of(config.garbageCollectionThreshold));
    v.add("expandable_segments", Value::of(config.expandableSegments));
    v.add("pinned_num_register_threads", Value::of(int64_t{1}));
    v.add("release_lock_on_cudamalloc", Value::of(config.releaseLockOnDeviceMalloc));
    v.add("pinned_use_cuda_host_register", Value::of(false));
    v.add("graph_capture_record_stream_reuse", Value::of(false));
    v.add("per_process_memory_fraction", Value::of(config.perProcessMemoryFraction));
    Value& divisions = v.add("roundup_power2_divisions", Value::dict());
    for (size_t i = 0; i < AllocConfig::kRoundupIntervals; ++i)
        divisions.add(std::to_string(size_t{1} << i),
                      Value::of(static_cast<int64_t>(config.roundupDivisions[i])));
    return v;
}

mem::Snapshot assembleSnapshot(std::vector<DeviceSnapshot>& devices, int deviceCount,
                               const AllocConfig& config, HistoryRecorder& history) {
    mem::Snapshot snap;
    try {
        fill(snap, devices, deviceCount, config, history);
    } catch (...) {
        releaseSnapshotContexts(devices, history);
        throw;
    }
    releaseSnapshotContexts(devices, history);
    return snap;
}

}  // namespace mtia::allocator
