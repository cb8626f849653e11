// The snapshot document: every key of PyTorch 2.x's schema with its type,
// and the invariants its readers assert (block sizes add up to the segment,
// sizes agree with the block states, segments sorted by address).
#include "history_test_util.hpp"

#include <sys/stat.h>

#include <fstream>
#include <set>

namespace history_test {
namespace {

using Schema = HistoryTest;

void expectKeys(element e, std::initializer_list<const char*> keys, const char* what) {
    for (const char* k : keys) EXPECT_EQ(e[k].error(), simdjson::SUCCESS) << what << " lacks " << k;
}

TEST_F(Schema, EveryKeyAndInvariant) {
    ASSERT_OK(mtiaMemoryRecordHistory(mtiaHistoryAll, mtiaStacksCpp, 0));
    int devices = 0;
    ASSERT_OK(mtiaGetDeviceCount(&devices));
    std::vector<void*> live;
    live.push_back(mallocOn(100));       // small pool
    live.push_back(mallocOn(3 * kMiB));  // large pool
    void* freed = mallocOn(600 * kKiB);
    live.push_back(mallocOn(600 * kKiB));
    freeOk(freed);  // an inactive block beside live ones
    if (devices > 1) {
        DeviceScope scope(1);
        live.push_back(mallocOn(2 * kMiB));
    }
    JsonSnapshot snap;
    const element root = snap.root();
    expectKeys(root, {"segments", "device_traces", "allocator_settings", "external_annotations"},
               "snapshot");
    EXPECT_EQ(root["device_traces"].get_array().size(), static_cast<size_t>(devices));
    const element settings = root["allocator_settings"];
    expectKeys(settings,
               {"PYTORCH_CUDA_ALLOC_CONF", "max_split_size", "garbage_collection_threshold",
                "expandable_segments", "release_lock_on_cudamalloc", "roundup_power2_divisions"},
               "allocator_settings");
    EXPECT_EQ(settings["roundup_power2_divisions"].get_object().size(), 16u);
    EXPECT_EQ(settings["roundup_power2_divisions"]["32768"].error(), simdjson::SUCCESS);

    uint64_t lastAddress = 0;
    std::set<int64_t> devicesSeen;
    size_t liveFound = 0;
    for (element s : snap.segments()) {
        expectKeys(s,
                   {"device", "address", "total_size", "allocated_size", "active_size",
                    "requested_size", "stream", "segment_type", "segment_pool_id", "is_expandable",
                    "frames", "blocks"},
                   "segment");
        EXPECT_GE(u64(s, "address"), lastAddress) << "segments are sorted by address";
        lastAddress = u64(s, "address");
        devicesSeen.insert(i64(s, "device"));
        const std::string_view type = str(s, "segment_type");
        EXPECT_TRUE(type == "small" || type == "large") << type;
        EXPECT_EQ(s["segment_pool_id"].get_array().size(), 2u);
        uint64_t sum = 0, allocated = 0, active = 0, requested = 0;
        uint64_t expectedAddress = u64(s, "address");
        for (element b : s["blocks"].get_array()) {
            expectKeys(b, {"address", "size", "requested_size", "state", "frames"}, "block");
            EXPECT_EQ(u64(b, "address"), expectedAddress) << "blocks are contiguous";
            expectedAddress += u64(b, "size");
            sum += u64(b, "size");
            const std::string_view state = str(b, "state");
            ASSERT_TRUE(state == "active_allocated" || state == "active_pending_free" ||
                        state == "inactive")
                << state;
            if (state == "active_allocated") allocated += u64(b, "size");
            if (state != "inactive") {
                active += u64(b, "size");
                requested += u64(b, "requested_size");
                EXPECT_LE(u64(b, "requested_size"), u64(b, "size"));
            }
            for (void* p : live)
                if (u64(b, "address") == addr(p)) {
                    ++liveFound;
                    EXPECT_EQ(state, "active_allocated");
                    EXPECT_FALSE(frameNames(b).empty());
                }
            for (element f : b["frames"].get_array())
                expectKeys(f, {"filename", "line", "name"}, "frame");
        }
        EXPECT_EQ(sum, u64(s, "total_size")) << "block sizes add up to total_size";
        EXPECT_EQ(allocated, u64(s, "allocated_size"));
        EXPECT_EQ(active, u64(s, "active_size"));
        EXPECT_EQ(requested, u64(s, "requested_size"));
    }
    EXPECT_EQ(liveFound, live.size());
    EXPECT_EQ(devicesSeen.size(), static_cast<size_t>(devices > 1 ? 2 : 1));
    for (element e : snap.trace()) {
        expectKeys(e,
                   {"action", "size", "stream", "time_us", "frames", "pool_id", "compile_context",
                    "user_metadata"},
                   "trace entry");
        if (str(e, "action") != "oom") expectKeys(e, {"addr"}, "trace entry");
    }
    for (void* p : live) {
        int dev = 0;
        mtiaPointerAttributes attr{};
        attr.structSize = sizeof attr;
        ASSERT_OK(mtiaPointerGetAttributes(&attr, p));
        dev = attr.device;
        DeviceScope scope(dev);
        freeOk(p);
    }
}

TEST_F(Schema, PickleAndJsonDumpsAreFiles) {
    ASSERT_OK(mtiaMemoryRecordHistory(mtiaHistoryAll, mtiaStacksCpp, 0));
    void* p = mallocOn(kMiB);
    const std::string dir = ::testing::TempDir();
    const std::string json = dir + "/history_schema.json";
    const std::string pickle = dir + "/history_schema.pickle";
    ASSERT_OK(mtiaMemoryDumpSnapshot(json.c_str(), mtiaSnapshotJson, mtiaSnapshotIncludeTraces));
    ASSERT_OK(
        mtiaMemoryDumpSnapshot(pickle.c_str(), mtiaSnapshotPickle, mtiaSnapshotIncludeTraces));
    std::ifstream j(json), k(pickle, std::ios::binary);
    std::string jtext((std::istreambuf_iterator<char>(j)), {});
    std::string ktext((std::istreambuf_iterator<char>(k)), {});
    EXPECT_EQ(jtext.front(), '{');
    ASSERT_GE(ktext.size(), 3u);
    EXPECT_EQ(static_cast<unsigned char>(ktext[0]), 0x80) << "PROTO";
    EXPECT_EQ(ktext[1], 4) << "protocol 4";
    EXPECT_EQ(ktext.back(), '.') << "STOP";
    mtiaBuffer buf{};
    ASSERT_OK(mtiaMemorySnapshot(mtiaSnapshotPickle, 0, &buf));
    EXPECT_GT(buf.size, 0u);
    ASSERT_OK(mtiaBufferFree(&buf));
    EXPECT_EQ(buf.data, nullptr);
    EXPECT_EQ(buf.size, 0u);
    freeOk(p);
    std::remove(json.c_str());
    std::remove(pickle.c_str());
}

TEST_F(Schema, BadInputIsRefusedNamingTheArgument) {
    EXPECT_FAILS(mtiaErrorInvalidValue,
                 mtiaMemoryRecordHistory(static_cast<mtiaHistoryMode>(3), mtiaStacksNone, 0),
                 "mode");
    EXPECT_FAILS(mtiaErrorInvalidValue,
                 mtiaMemoryRecordHistory(static_cast<mtiaHistoryMode>(-1), mtiaStacksNone, 0),
                 "mode");
    EXPECT_FAILS(mtiaErrorInvalidValue,
                 mtiaMemoryRecordHistory(mtiaHistoryAll, static_cast<mtiaStackMode>(4), 0),
                 "stacks");
    mtiaBuffer buf{};
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaMemorySnapshot(mtiaSnapshotJson, 0, nullptr), "out");
    EXPECT_FAILS(mtiaErrorInvalidValue,
                 mtiaMemorySnapshot(static_cast<mtiaSnapshotFormat>(2), 0, &buf), "fmt");
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaMemorySnapshot(mtiaSnapshotJson, 6, &buf), "flags");
    EXPECT_EQ(buf.data, nullptr) << "nothing is returned on failure";
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaMemoryDumpSnapshot(nullptr, mtiaSnapshotJson, 0),
                 "path");
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaMemoryDumpSnapshot("", mtiaSnapshotJson, 0), "path");
    EXPECT_FAILS(mtiaErrorInvalidValue,
                 mtiaMemoryDumpSnapshot("/nonexistent-dir/x.json", mtiaSnapshotJson, 0),
                 "/nonexistent-dir/x.json|No such file");
    // A write that fails (a full device): the message names the path and the reason; the device
    // stays.
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaMemoryDumpSnapshot("/dev/full", mtiaSnapshotJson, 0),
                 "/dev/full|No space left");
    struct stat full {};
    EXPECT_EQ(::stat("/dev/full", &full), 0);
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaMemoryAnnotate(nullptr, "v"), "key");
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaMemoryAnnotate("", "v"), "key");
    mtiaContextProvider small{};
    small.structSize = 8;
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaMemorySetContextProvider(&small), "structSize");
    mtiaContextProvider noCapture{};
    noCapture.structSize = sizeof noCapture;
    noCapture.resolve = [](void*, uint64_t, mtiaFrameSink, void*) {};
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaMemorySetContextProvider(&noCapture), "capture");
    EXPECT_OK(mtiaBufferFree(nullptr));
    mtiaBuffer empty{};
    EXPECT_OK(mtiaBufferFree(&empty));
}

// Runs in a process of its own with MTIA_OOM_SNAPSHOT set to a path and a small device.
TEST(OomSnapshot, WrittenBeforeTheErrorReturns) {
    const char* path = std::getenv("MTIA_OOM_SNAPSHOT");
    ASSERT_NE(path, nullptr) << "run with MTIA_OOM_SNAPSHOT set";
    std::remove(path);
    void* p = nullptr;
    MemInfo info = memInfo();
    ASSERT_EQ(mtiaMalloc(&p, info.total * 2), mtiaErrorMemoryAllocation);
    EXPECT_FALSE(std::ifstream(path).good()) << "no snapshot while history is not recorded";
    ASSERT_OK(mtiaMemoryRecordHistory(mtiaHistoryAll, mtiaStacksCpp, 0));
    void* q = mallocOn(kMiB);
    ASSERT_EQ(mtiaMalloc(&p, info.total * 2), mtiaErrorMemoryAllocation);
    std::ifstream in(path);
    ASSERT_TRUE(in.good()) << path;
    std::string text((std::istreambuf_iterator<char>(in)), {});
    simdjson::dom::parser parser;
    element root;
    ASSERT_EQ(parser.parse(text).get(root), simdjson::SUCCESS);
    bool oom = false;
    for (element e : root["device_traces"].at(0).get_array())
        if (e["action"].get_string().value() == "oom") oom = true;
    EXPECT_TRUE(oom) << "the snapshot holds the oom entry";
    freeOk(q);
    ASSERT_OK(mtiaMemoryRecordHistory(mtiaHistoryOff, mtiaStacksNone, 0));
    std::remove(path);
}

}  // namespace
}  // namespace history_test
