// mtia-mem's snapshot readers: the 2.x JSON shape with segments, blocks and frames; the older
// shapes (2.0 block history, PyTorch 1.13's bare list of segments); the same snapshot as a pickle;
// and clear errors, naming where, for files that are not snapshots.
#include "allocator/snapshot/pickle_writer.hpp"
#include "allocator/snapshot/writer.hpp"
#include "snapshot_reader.hpp"
#include "trace_generator.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <unistd.h>

namespace {

using namespace mtia::mem;

class TempFile {
public:
    explicit TempFile(const std::string& contents) {
        char path[] = "/tmp/mtia-mem-test-XXXXXX";
        const int fd = mkstemp(path);
        EXPECT_GE(fd, 0);
        EXPECT_EQ(write(fd, contents.data(), contents.size()),
                  static_cast<ssize_t>(contents.size()));
        close(fd);
        path_ = path;
    }
    ~TempFile() { std::remove(path_.c_str()); }
    const std::string& path() const { return path_; }

private:
    std::string path_;
};

Snapshot read(const std::string& contents, const ReadOptions& options = {}) {
    TempFile f(contents);
    return readSnapshot(f.path(), options);
}

std::string errorOf(const std::string& contents) {
    try {
        read(contents);
    } catch (const SnapshotError& e) {
        return e.what();
    }
    return "(accepted)";
}

#define EXPECT_ERROR(contents, text)                                                               \
    EXPECT_NE(errorOf(contents).find(text), std::string::npos) << errorOf(contents)

const char* const kSnapshot = R"({
  "segments": [
    {"device": 0, "address": 139000000000000, "total_size": 2097152, "allocated_size": 1048576,
     "active_size": 1048576, "requested_size": 1000000, "stream": 0, "segment_type": "large",
     "segment_pool_id": [0, 0], "is_expandable": false,
     "frames": [{"filename": "train.py", "line": 10, "name": "step"}],
     "blocks": [
       {"address": 139000000000000, "size": 1048576, "requested_size": 1000000, "state": "active_allocated",
        "frames": [{"filename": "model.py", "line": 42, "name": "forward"},
                   {"filename": "train.py", "line": 10, "name": "step"}]},
       {"address": 139000001048576, "size": 1048576, "requested_size": 0, "state": "inactive", "frames": []}]},
    {"device": 1, "address": 140000000000000, "total_size": 20971520, "stream": 94000000000000,
     "segment_type": "small", "segment_pool_id": [1, 7], "is_expandable": true,
     "blocks": [{"size": 20971520, "state": "active_pending_free"}]}],
  "device_traces": [[
      {"action": "alloc", "addr": 139000000000000, "size": 1000000, "stream": 0, "time_us": 1700000000000017,
       "frames": [{"filename": "model.py", "line": 42, "name": "forward"},
                  {"filename": "train.py", "line": 10, "name": "step"}]},
      {"action": "free_requested", "addr": 139000000000000, "size": 1000000, "stream": 0},
      {"action": "free_completed", "addr": 139000000000000, "size": 1000000, "stream": 0, "time_us": 5.5},
      {"action": "segment_map", "addr": 5, "size": 2097152, "stream": 7},
      {"action": "oom", "device_free": 1024, "size": 9999, "stream": 0},
      {"action": "snapshot", "addr": 0, "size": 77, "stream": 0},
      {"action": "annotate", "stream": 0},
      {"action": "something_newer", "stream": 0}],
    [],
    [{"action": "alloc", "addr": 8, "size": 512, "stream": 3}]],
  "allocator_settings": {"expandable_segments": false},
  "external_annotations": []})";

TEST(SnapshotReader, ReadsTheTwoXShape) {
    const Snapshot s = read(kSnapshot);
    EXPECT_EQ(s.shape, Shape::V2);
    EXPECT_TRUE(s.hasTraces);
    ASSERT_EQ(s.deviceTraces.size(), 3u);
    const auto& t = s.deviceTraces[0];
    ASSERT_EQ(t.size(), 8u);
    EXPECT_TRUE(s.deviceTraces[1].empty());
    EXPECT_EQ(s.deviceTraces[2][0].device, 2);
    EXPECT_EQ(s.deviceTraces[2][0].stream, 3u);
    EXPECT_EQ(t[0].action, Action::Alloc);
    EXPECT_EQ(t[0].device, 0);
    EXPECT_EQ(t[0].addr, 139000000000000u);
    EXPECT_EQ(t[0].size, 1000000u);
    EXPECT_EQ(t[0].timeUs, 1700000000000017.0);
    ASSERT_NE(t[0].stack, 0u);
    ASSERT_EQ(s.stacks.frames(t[0].stack).size(), 2u);
    EXPECT_EQ(s.stacks.frames(t[0].stack)[0], (Frame{"model.py", 42, "forward"}));
    EXPECT_EQ(t[1].action, Action::FreeRequested);
    EXPECT_EQ(t[1].stack, 0u);
    EXPECT_EQ(t[2].action, Action::FreeCompleted);
    EXPECT_EQ(t[2].timeUs, 5.5);
    EXPECT_EQ(t[3].action, Action::SegmentMap);
    EXPECT_EQ(t[3].stream, 7u);
    EXPECT_EQ(t[4].action, Action::Oom);
    EXPECT_EQ(t[4].addr, 1024u);  // device_free
    EXPECT_EQ(t[5].action, Action::Snapshot);
    EXPECT_EQ(t[6].action, Action::Annotate);
    EXPECT_EQ(t[7].action, Action::Other);

    ASSERT_EQ(s.segments.size(), 2u);
    const Segment& a = s.segments[0];
    EXPECT_EQ(a.address, 139000000000000u);
    EXPECT_EQ(a.totalSize, 2097152u);
    EXPECT_EQ(a.allocatedSize, 1048576u);
    EXPECT_EQ(a.requestedSize, 1000000u);
    EXPECT_TRUE(a.large);
    EXPECT_FALSE(a.expandable);
    EXPECT_EQ(s.stacks.frames(a.stack).size(), 1u);
    ASSERT_EQ(a.blocks.size(), 2u);
    EXPECT_EQ(a.blocks[0].state, BlockState::ActiveAllocated);
    EXPECT_EQ(a.blocks[0].stack, t[0].stack) << "the same traceback is interned once";
    EXPECT_EQ(a.blocks[1].address, 139000001048576u);
    EXPECT_EQ(a.blocks[1].state, BlockState::Inactive);
    const Segment& b = s.segments[1];
    EXPECT_EQ(b.device, 1);
    EXPECT_EQ(b.stream, 94000000000000u);
    EXPECT_FALSE(b.large);
    EXPECT_TRUE(b.expandable);
    EXPECT_EQ(b.poolId[0], 1u);
    EXPECT_EQ(b.poolId[1], 7u);
    ASSERT_EQ(b.blocks.size(), 1u);
    EXPECT_EQ(b.blocks[0].address, b.address)
        << "a block without an address starts where the last one ended";
    EXPECT_EQ(b.blocks[0].requestedSize, b.blocks[0].size);
    EXPECT_EQ(b.blocks[0].state, BlockState::ActivePendingFree);
}

TEST(SnapshotReader, SkipsWhatItIsNotAskedFor) {
    ReadOptions traceOnly;
    traceOnly.segments = false;
    traceOnly.frames = false;
    const Snapshot s = read(kSnapshot, traceOnly);
    EXPECT_TRUE(s.segments.empty());
    ASSERT_EQ(s.deviceTraces[0].size(), 8u);
    EXPECT_EQ(s.deviceTraces[0][0].stack, 0u);
    EXPECT_EQ(s.stacks.size(), 1u);
}

TEST(SnapshotReader, ReadsOlderShapes) {
    // PyTorch 1.13: a bare list of segments; blocks keep their request and stack in history.
    const Snapshot old = read(R"([
    {"device": 0, "address": 4096, "total_size": 3072, "allocated_size": 1024, "active_size": 1024,
     "stream": 0, "segment_type": "small",
     "blocks": [{"size": 1024, "state": "active_allocated",
                 "history": [{"addr": 4096, "real_size": 1000,
                              "frames": [{"filename": "a.py", "name": "f", "line": 3}]}]},
                {"size": 2048, "state": "inactive"}]}])");
    EXPECT_EQ(old.shape, Shape::SegmentList);
    EXPECT_FALSE(old.hasTraces);
    ASSERT_EQ(old.segments.size(), 1u);
    ASSERT_EQ(old.segments[0].blocks.size(), 2u);
    const Block& used = old.segments[0].blocks[0];
    EXPECT_EQ(used.address, 4096u);
    EXPECT_EQ(used.requestedSize, 1000u);
    ASSERT_NE(used.stack, 0u);
    EXPECT_EQ(old.stacks.frames(used.stack)[0], (Frame{"a.py", 3, "f"}));
    EXPECT_EQ(old.segments[0].blocks[1].address, 5120u);
    EXPECT_EQ(old.segments[0].blocks[1].requestedSize, 2048u);
    EXPECT_FALSE(old.segments[0].large);
    // 2.x without history: segments only.
    const Snapshot noHistory = read(R"({"segments": []})");
    EXPECT_FALSE(noHistory.hasTraces);
    EXPECT_TRUE(noHistory.deviceTraces.empty());
    // 2.0: traces without time_us.
    const Snapshot v20 =
        read(R"({"segments": [], "device_traces": [[{"action": "alloc", "addr": 1, "size": 2,
                                "stream": 0}]]})");
    EXPECT_EQ(v20.deviceTraces[0][0].timeUs, 0.0);
}

TEST(SnapshotReader, PickleReadsLikeJson) {
    const Snapshot fromJson = read(kSnapshot);
    const Snapshot fromPickle = read(toPickle(fromJson));
    ASSERT_EQ(fromPickle.deviceTraces.size(), fromJson.deviceTraces.size());
    for (size_t d = 0; d < fromJson.deviceTraces.size(); ++d) {
        ASSERT_EQ(fromPickle.deviceTraces[d].size(), fromJson.deviceTraces[d].size());
        for (size_t i = 0; i < fromJson.deviceTraces[d].size(); ++i) {
            const TraceEntry& a = fromJson.deviceTraces[d][i];
            const TraceEntry& b = fromPickle.deviceTraces[d][i];
            EXPECT_EQ(a.action, b.action) << i;
            EXPECT_EQ(a.addr, b.addr);
            EXPECT_EQ(a.size, b.size);
            EXPECT_EQ(a.stream, b.stream);
            EXPECT_EQ(a.timeUs, b.timeUs);
            EXPECT_EQ(fromJson.stacks.frames(a.stack), fromPickle.stacks.frames(b.stack));
        }
    }
    ASSERT_EQ(fromPickle.segments.size(), fromJson.segments.size());
    for (size_t i = 0; i < fromJson.segments.size(); ++i) {
        const Segment& a = fromJson.segments[i];
        const Segment& b = fromPickle.segments[i];
        EXPECT_EQ(a.address, b.address);
        EXPECT_EQ(a.totalSize, b.totalSize);
        EXPECT_EQ(a.stream, b.stream);
        EXPECT_EQ(a.expandable, b.expandable);
        EXPECT_EQ(a.poolId[1], b.poolId[1]);
        ASSERT_EQ(a.blocks.size(), b.blocks.size());
        for (size_t k = 0; k < a.blocks.size(); ++k) {
            EXPECT_EQ(a.blocks[k].address, b.blocks[k].address);
            EXPECT_EQ(a.blocks[k].requestedSize, b.blocks[k].requestedSize);
            EXPECT_EQ(a.blocks[k].state, b.blocks[k].state);
            EXPECT_EQ(fromJson.stacks.frames(a.blocks[k].stack),
                      fromPickle.stacks.frames(b.blocks[k].stack));
        }
    }
}

TEST(SnapshotReader, SaysWhatIsWrongAndWhere) {
    EXPECT_ERROR("not json at all", "not a JSON snapshot");
    EXPECT_ERROR("", "not a JSON snapshot");
    EXPECT_ERROR(R"({"device_traces": [[{"action": "alloc", "addr": 1, "size": 2}]])",
                 "not a JSON snapshot");
    EXPECT_ERROR("5", "neither a dict (PyTorch 2.x) nor a list of segments");
    EXPECT_ERROR(R"({"allocator_settings": {}})", "without 'segments' or 'device_traces'");
    EXPECT_ERROR(R"({"device_traces": 5})", "device_traces: is not a list");
    EXPECT_ERROR(R"({"device_traces": [5]})", "device_traces[0]: is not a list");
    EXPECT_ERROR(R"({"device_traces": [[], [7]]})", "device_traces[1][0]: is not a trace entry");
    EXPECT_ERROR(R"({"device_traces": [[{"addr": 1}]]})", "device_traces[0][0]: no 'action'");
    EXPECT_ERROR(R"({"device_traces": [[{"action": 3}]]})", "'action' is not a string");
    EXPECT_ERROR(R"({"device_traces": [[{"action": "alloc", "addr": 1}]]})",
                 "device_traces[0][0]: no 'size'");
    EXPECT_ERROR(R"({"device_traces": [[{"action": "free_requested", "size": 1}]]})", "no 'addr'");
    EXPECT_ERROR(R"({"device_traces": [[{"action": "alloc", "addr": "x", "size": 1}]]})",
                 "'addr' is not a non-negative integer");
    EXPECT_ERROR(R"({"device_traces": [[{"action": "alloc", "addr": -5, "size": 1}]]})",
                 "'addr' is not a non-negative");
    EXPECT_ERROR(R"({"device_traces": [[{"action": "alloc", "addr": 1.5, "size": 1}]]})",
                 "'addr' is not a non-negative");
    EXPECT_ERROR(
        R"({"device_traces": [[{"action": "alloc", "addr": 1, "size": 1, "time_us": "x"}]]})",
        "'time_us' is not a number");
    EXPECT_ERROR(R"({"device_traces": [[{"action": "alloc", "addr": 1, "size": 1, "frames": 3}]]})",
                 "device_traces[0][0].frames: is not a list");
    EXPECT_ERROR(
        R"({"device_traces": [[{"action": "alloc", "addr": 1, "size": 1, "frames": [1]}]]})",
        "device_traces[0][0].frames[0]: is not a frame");
    EXPECT_ERROR(R"({"segments": [{"address": 1, "blocks": []}]})", "segments[0]: no 'total_size'");
    EXPECT_ERROR(R"({"segments": [{"address": 1, "total_size": 2}]})", "segments[0]: no 'blocks'");
    EXPECT_ERROR(R"({"segments": [{"address": 1, "total_size": 2, "blocks": [{"size": 2}]}]})",
                 "segments[0].blocks[0]: no 'state'");
    EXPECT_ERROR(
        R"({"segments": [{"address": 1, "total_size": 2, "segment_pool_id": [1], "blocks": []}]})",
        "segments[0].segment_pool_id: is not a pair of integers");
    EXPECT_ERROR(
        R"({"segments": [{"address": 1, "total_size": 2, "is_expandable": 1, "blocks": []}]})",
        "'is_expandable' is not a boolean");
    EXPECT_ERROR(R"([{"address": 1, "total_size": 2, "blocks": [{"size": 1, "state": "inactive",
                  "history": [{"real_size": -1}]}]}])",
                 "segments[0].blocks[0].history[0]: 'real_size' is not a non-negative integer");
    // Pickles: malformed ones name the offset; well-formed ones that are not snapshots say so.
    EXPECT_ERROR(std::string("\x80\x04K\x01", 4),
                 "malformed pickle: offset 4: input ends without STOP");
    EXPECT_ERROR(std::string("\x80\x04K\x01.", 5), "neither a dict");
    EXPECT_ERROR(std::string("\x80\x04}\x8c\x0d"
                             "device_tracesK\x01s.",
                             22),
                 "device_traces: is not a list");
    try {
        readSnapshot("/nonexistent/snapshot.pickle");
        ADD_FAILURE() << "a missing file was read";
    } catch (const SnapshotError& e) {
        EXPECT_NE(std::string(e.what()).find("/nonexistent/snapshot.pickle: cannot open"),
                  std::string::npos)
            << e.what();
    }
}

TEST(SnapshotReader, DamagedFilesAreRefusedNotCrashedOn) {
    // A real snapshot pickle, damaged in many ways (a deterministic sequence of byte flips, cuts
    // and splices): each read either succeeds or throws SnapshotError. Run under ASan/UBSan this is
    // the reader's fuzz test.
    GenerateOptions o;
    o.workload = Workload::KvCache;
    o.steps = 3;
    Snapshot snap = generate(o).snapshot;
    snap.segments = read(kSnapshot).segments;
    snap.stacks = read(kSnapshot).stacks;
    snap.deviceTraces[0].resize(40);
    snap.deviceTraces[0][5].stack = 1;
    const std::string good = toPickle(snap);
    uint64_t x = 88172645463325252ull;  // xorshift64
    auto next = [&x] {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        return x;
    };
    size_t accepted = 0;
    for (int round = 0; round < 3000; ++round) {
        std::string bad = good;
        switch (round % 4) {
        case 0:  // flip a few bytes
            for (int k = 0; k < 3; ++k) bad[next() % bad.size()] = static_cast<char>(next());
            break;
        case 1:  // cut
            bad.resize(next() % bad.size());
            break;
        case 2: {  // move a slice elsewhere
            const size_t from = next() % bad.size(), len = next() % 64, to = next() % bad.size();
            bad.insert(to, good.substr(from, len));
            break;
        }
        case 3:  // one byte set to an opcode
            bad[2 + next() % (bad.size() - 2)] =
                "(.NJKMXaehj}]qrsu)G\x85\x86\x87\x88\x89\x8a\x8c\x94"[next() % 26];
            break;
        }
        try {
            readPickleSnapshot("damaged", bad);
            ++accepted;
        } catch (const SnapshotError&) {}
    }
    EXPECT_LT(accepted, 3000u);
}

TEST(SnapshotReader, KeepsWhatExportWritesBack) {
    const Snapshot s = read(R"({"segments": [], "device_traces": [[
      {"action": "alloc", "addr": 1, "size": 2, "pool_id": [3, 4], "user_metadata": "batch=3",
       "compile_context": "Torch-Compiled Region: 0/0"},
      {"action": "alloc", "addr": 5, "size": 2, "user_metadata": "batch=3"}]],
    "allocator_settings": {"max_split_size": -1, "garbage_collection_threshold": 0.5, "expandable_segments": true,
                           "PYTORCH_CUDA_ALLOC_CONF": "x", "roundup_power2_divisions": {"1": 4}, "none": null,
                           "big": 18446744073709551615},
    "external_annotations": [{"name": "step", "stage": "START", "device": 0, "time_us": 7}, [1, "a"]]})");
    const TraceEntry& e = s.deviceTraces[0][0];
    EXPECT_EQ(e.poolId[0], 3u);
    EXPECT_EQ(e.poolId[1], 4u);
    EXPECT_EQ(s.strings[e.userMetadata], "batch=3");
    EXPECT_EQ(s.strings[e.compileContext], "Torch-Compiled Region: 0/0");
    EXPECT_EQ(s.deviceTraces[0][1].userMetadata, e.userMetadata) << "texts are interned";
    EXPECT_EQ(s.deviceTraces[0][1].compileContext, 0u);
    const Value& a = s.allocatorSettings;
    ASSERT_EQ(a.kind, Value::Kind::Dict);
    ASSERT_EQ(a.fields.size(), 7u);
    EXPECT_EQ(a.fields[0].first, "max_split_size") << "members keep their order";
    EXPECT_EQ(*a.find("max_split_size"), Value::of(int64_t{-1}));
    EXPECT_EQ(*a.find("garbage_collection_threshold"), Value::of(0.5));
    EXPECT_EQ(*a.find("expandable_segments"), Value::of(true));
    EXPECT_EQ(a.find("roundup_power2_divisions")->find("1")->integer, 4);
    EXPECT_EQ(a.find("none")->kind, Value::Kind::None);
    EXPECT_EQ(a.find("big")->kind, Value::Kind::Float) << "beyond int64";
    ASSERT_EQ(s.externalAnnotations.size(), 2u);
    EXPECT_EQ(s.externalAnnotations[0].find("stage")->text, "START");
    EXPECT_EQ(s.externalAnnotations[1].items.size(), 2u);
    // And the same through our pickle, where pool ids are tuples and the order of members is kept.
    const Snapshot p = read(toPickle(s));
    EXPECT_EQ(p.allocatorSettings, s.allocatorSettings);
    EXPECT_EQ(p.externalAnnotations, s.externalAnnotations);
    EXPECT_EQ(p.strings[p.deviceTraces[0][0].compileContext], "Torch-Compiled Region: 0/0");
    EXPECT_EQ(p.deviceTraces[0][0].poolId[1], 4u);
}

TEST(SnapshotReader, AddressesAboveInt64ReadBackFromOurPickle) {
    Snapshot s;
    s.hasTraces = true;
    TraceEntry e;
    e.action = Action::Alloc;
    e.addr = (uint64_t{1} << 63) + 5;
    e.size = (uint64_t{1} << 61) +
             3;  // sizes that add up to 2^62 or more are refused (snapshot_builder.hpp)
    s.deviceTraces.push_back({e});
    const Snapshot p = read(toPickle(s));
    EXPECT_EQ(p.deviceTraces[0][0].addr, e.addr);
    EXPECT_EQ(p.deviceTraces[0][0].size, e.size);
}

TEST(SnapshotReader, HostileFilesAreBoundedByTheirSize) {
    // A 1000-entry trace memoized once, then referred to 3000 times as the traces of 3000 devices:
    // a few KB that describe three million entries.
    std::string bomb;
    {
        pickle::Writer w(bomb);
        w.beginDict();
        w.item();
        w.string("device_traces");
        w.beginList();
        w.item();
        w.beginList();
        for (int i = 0; i < 1000; ++i) {
            w.item();
            w.beginDict();
            w.item();
            w.string("action");
            w.string("snapshot");
            w.end();
        }
        w.end();
        const uint32_t trace = w.memoize();
        for (int i = 0; i < 3000; ++i) {
            w.item();
            w.get(trace);
        }
        w.end();
        w.end();
        w.finish();
    }
    EXPECT_LT(bomb.size(), 30000u);
    EXPECT_ERROR(bomb, "more than its size can hold");
    // Values nested deeper than anyone writes them, and a list that holds itself.
    std::string deep =
        "{\"segments\": [], \"allocator_settings\": {\"a\": " + std::string(100, '[') +
        std::string(100, ']') + "}}";
    EXPECT_ERROR(deep, "allocator_settings.a[0][0]");
    EXPECT_ERROR(deep, "nested more than 64 levels deep");
    std::string loop;  // {"segments": [], "allocator_settings": {"a": l}} where l = [l]
    {
        pickle::Writer w(loop);
        w.beginDict();
        w.item();
        w.string("segments");
        w.beginList();
        w.end();
        w.item();
        w.string("allocator_settings");
        w.beginDict();
        w.item();
        w.string("a");
        w.beginList();
        const uint32_t self = w.memoize();
        w.item();
        w.get(self);
        w.end();
        w.end();
        w.end();
        w.finish();
    }
    EXPECT_ERROR(loop, "nested more than 64 levels deep");
    // Pickle strings are UTF-8, as Python requires.
    EXPECT_ERROR(std::string("\x80\x04}\x8c\x08"
                             "segments]\x8c\x02\xff\xfe]s.",
                             20),
                 "a string that is not UTF-8");
}

}  // namespace
