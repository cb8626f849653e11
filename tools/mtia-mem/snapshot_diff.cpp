#include "snapshot_diff.hpp"

#include <unordered_map>

namespace mtia::mem {

namespace {

// Stacks of `before` that `after` never saw: ids beyond after's table, so they match nothing there.
constexpr StackId kUnknownStack = UINT32_MAX;

struct BlockKey {
    int device;
    uint64_t address;
    uint64_t size;
    StackId stack;  // in after's table
    bool operator==(const BlockKey&) const = default;
};

struct BlockKeyHash {
    size_t operator()(const BlockKey& k) const {
        uint64_t h = k.address * 0x9e3779b97f4a7c15ull;
        h ^= (k.size + (uint64_t(k.stack) << 32) + uint64_t(uint32_t(k.device))) *
             0xc2b2ae3d27d4eb4full;
        return static_cast<size_t>(h ^ (h >> 29));
    }
};

template <class F>
void forEachLiveBlock(const Snapshot& snap, F&& f) {
    for (const Segment& seg : snap.segments)
        for (const Block& b : seg.blocks)
            if (b.state == BlockState::ActiveAllocated) f(seg.device, b);
}

}  // namespace

SnapshotDiff diffSnapshots(const Snapshot& before, const Snapshot& after) {
    SnapshotDiff d;
    std::vector<StackId> inAfter(before.stacks.size(),
                                 kUnknownStack);  // before's stack ids -> after's
    for (StackId id = 0; id < before.stacks.size(); ++id)
        if (auto found = after.stacks.find(before.stacks.frames(id))) inAfter[id] = *found;

    // Counts, not a set: a damaged snapshot may list one block twice.
    std::unordered_map<BlockKey, uint64_t, BlockKeyHash> earlier;
    forEachLiveBlock(before, [&](int device, const Block& b) {
        ++earlier[BlockKey{device, b.address, b.size, inAfter[b.stack]}];
        ++d.beforeBlocks;
        d.beforeBytes += b.size;
    });
    forEachLiveBlock(after, [&](int device, const Block& b) {
        ++d.afterBlocks;
        d.afterBytes += b.size;
        auto it = earlier.find(BlockKey{device, b.address, b.size, b.stack});
        if (it != earlier.end() && it->second > 0) {
            --it->second;
            return;
        }
        d.added.add(b.stack, b.size);
        DeviceChange& c = d.devices[device];
        ++c.newBlocks;
        c.newBytes += b.size;
    });
    for (const auto& [key, left] : earlier) {
        if (left == 0) continue;
        d.freedBlocks += left;
        d.freedBytes += left * key.size;
        DeviceChange& c = d.devices[key.device];
        c.freedBlocks += left;
        c.freedBytes += left * key.size;
    }
    return d;
}

}  // namespace mtia::mem
