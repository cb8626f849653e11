// Conformance: the caching allocator's settings (mtiaAllocatorSetConfig, mtiaAllocatorGetConfig,
// MTIA_ALLOC_CONF) and their effect.
//   Config.*, Roundup.*   every key read back, the errors, roundup_power2_divisions in
//   allocated_bytes ConfigEnv.*           MTIA_ALLOC_CONF with every key (own process, see
//   CMakeLists.txt) ConfigBadEnv.*        a bad MTIA_ALLOC_CONF fails initialisation naming the key
//   (own processes) MaxSplit.*            max_split_size_mb and max_non_split_rounding_mb (own
//   process: cannot be unset) GarbageCollection.*   garbage_collection_threshold with a memory
//   fraction (own process) Fraction.*            per_process_memory_fraction and
//   mtiaSetMemoryFraction (own process)
#include "alloc_test_util.hpp"

#include <cmath>
#include <limits>

using namespace alloc_test;

namespace {

std::string getConfig() {
    char buf[4096];
    std::memset(buf, 0, sizeof buf);
    const mtiaError_t st = mtiaAllocatorGetConfig(buf, sizeof buf);
    if (st != mtiaSuccess) ADD_FAILURE() << "mtiaAllocatorGetConfig: " << mtiaGetLastErrorMessage();
    return buf;
}

bool has(const std::string& conf, const std::string& item) {
    // Whole items only: "x:1" must not match "x:10".
    return ("," + conf + ",").find("," + item + ",") != std::string::npos;
}

// Settings restored after each test (everything but the two keys that have no spelling for
// "unset").
class ConfigTest : public AllocTest {
protected:
    void SetUp() override {
        AllocTest::SetUp();
        saved_ = getConfig();
    }
    void TearDown() override {
        EXPECT_OK(mtiaAllocatorSetConfig(saved_.c_str()));
        EXPECT_EQ(getConfig(), saved_);
        AllocTest::TearDown();
    }
    std::string saved_;
};

class Config : public ConfigTest {};
class Roundup : public ConfigTest {};
class ConfigEnv : public AllocTest {};
class MaxSplit : public AllocTest {};
class GarbageCollection : public AllocTest {};
class Fraction : public AllocTest {};

// Out-of-memory observer shared by the tests of one process: records its last call.
struct ObservedOom {
    std::mutex mu;
    int calls = 0;
    int dev = -1;
    size_t requested = 0, total = 0, free = 0;
};
ObservedOom& observed() {
    static ObservedOom o;
    return o;
}
void observe(int dev, size_t requested, size_t total, size_t free, void*) {
    ObservedOom& o = observed();
    std::lock_guard lock(o.mu);
    ++o.calls;
    o.dev = dev;
    o.requested = requested;
    o.total = total;
    o.free = free;
}
void attachObserverOnce() {
    static const bool attached = [] {
        return mtiaAttachOutOfMemoryObserver(observe, nullptr) == mtiaSuccess;
    }();
    ASSERT_TRUE(attached);
}

}  // namespace

// ---- Config: every key, read back --------------------------------------------------------------

TEST_F(Config, DefaultsReadBack) {
    const std::string c = getConfig();
    EXPECT_TRUE(has(c, "max_non_split_rounding_mb:20")) << c;
    EXPECT_TRUE(has(c, "roundup_power2_divisions:0")) << c;
    EXPECT_TRUE(has(c, "expandable_segments:False")) << c;
    EXPECT_TRUE(has(c, "per_process_memory_fraction:1")) << c;
    EXPECT_TRUE(has(c, "release_lock_on_device_malloc:False")) << c;
    EXPECT_TRUE(has(c, "pinned_use_background_threads:False")) << c;
    EXPECT_EQ(c.find("max_split_size_mb"), std::string::npos) << "no limit is the default: " << c;
    EXPECT_EQ(c.find("garbage_collection_threshold"), std::string::npos)
        << "off is the default: " << c;
    EXPECT_EQ(memStats().max_split_size, -1)
        << "no max_split_size_mb reads as -1 (PyTorch's SIZE_MAX as int64)";
}

TEST_F(Config, EveryKeyIsAppliedAndReadBack) {
    struct Case {
        const char* set;
        const char* readBack;
    };
    const Case cases[] = {
        {"max_non_split_rounding_mb:64", "max_non_split_rounding_mb:64"},
        {"roundup_power2_divisions:4", "roundup_power2_divisions:4"},
        {"roundup_power2_divisions:0", "roundup_power2_divisions:0"},
        {"roundup_power2_divisions:[1:2,4:8,>:16]",
         "roundup_power2_divisions:[1:2,2:0,4:8,8:16,16:16,32:16,64:16,128:16,256:16,512:16,1024:"
         "16,2048:16,4096:16,"
         "8192:16,16384:16,>:16]"},
        {"expandable_segments:True", "expandable_segments:True"},
        {"expandable_segments:False", "expandable_segments:False"},
        {"per_process_memory_fraction:0.5", "per_process_memory_fraction:0.5"},
        {"per_process_memory_fraction:1", "per_process_memory_fraction:1"},
        {"release_lock_on_device_malloc:True", "release_lock_on_device_malloc:True"},
        {"release_lock_on_cudamalloc:False",
         "release_lock_on_device_malloc:False"},  // PyTorch's name
        {"release_lock_on_cudamalloc:True", "release_lock_on_device_malloc:True"},
        {"pinned_use_background_threads:True", "pinned_use_background_threads:True"},
        {"pinned_use_background_threads:False", "pinned_use_background_threads:False"},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.set);
        ASSERT_OK(mtiaAllocatorSetConfig(c.set));
        const std::string now = getConfig();
        if (std::string(c.readBack).find('[') != std::string::npos)
            EXPECT_NE(now.find(c.readBack), std::string::npos) << now;
        else
            EXPECT_TRUE(has(now, c.readBack)) << now;
        // What GetConfig writes is valid input and means the same.
        ASSERT_OK(mtiaAllocatorSetConfig(now.c_str()));
        EXPECT_EQ(getConfig(), now);
    }
}

TEST_F(Config, SeveralKeysAtOnceWithWhitespace) {
    ASSERT_OK(mtiaAllocatorSetConfig(" roundup_power2_divisions : 2 ,\texpandable_segments:True ,"
                                     "max_non_split_rounding_mb:24 "));
    const std::string c = getConfig();
    EXPECT_TRUE(has(c, "roundup_power2_divisions:2")) << c;
    EXPECT_TRUE(has(c, "expandable_segments:True")) << c;
    EXPECT_TRUE(has(c, "max_non_split_rounding_mb:24")) << c;
    // Applied on top: a later call changes only what it names.
    ASSERT_OK(mtiaAllocatorSetConfig("expandable_segments:False"));
    const std::string d = getConfig();
    EXPECT_TRUE(has(d, "roundup_power2_divisions:2")) << d;
    EXPECT_TRUE(has(d, "expandable_segments:False")) << d;
    ASSERT_OK(mtiaAllocatorSetConfig(""));
    EXPECT_EQ(getConfig(), d);
}

TEST_F(Config, BadSettingsAreRejectedNamingTheKeyAndChangeNothing) {
    struct Case {
        const char* conf;
        const char* needles;
    };
    const Case cases[] = {
        {"no_such_key:1", "mtiaAllocatorSetConfig|no_such_key"},
        {"backend:native", "backend"},
        {"expandable_segments:true", "expandable_segments|True or False"},
        {"expandable_segments:1", "expandable_segments|True or False"},
        {"expandable_segments:", "expandable_segments"},
        {"release_lock_on_cudamalloc:yes", "release_lock_on_cudamalloc|True or False"},
        {"release_lock_on_device_malloc:TRUE", "release_lock_on_device_malloc"},
        {"pinned_use_background_threads:false", "pinned_use_background_threads"},
        {"max_split_size_mb:19", "max_split_size_mb|20"},
        {"max_split_size_mb:-64", "max_split_size_mb"},
        {"max_split_size_mb:64MB", "max_split_size_mb"},
        {"max_split_size_mb:99999999999999999999", "max_split_size_mb"},
        {"max_non_split_rounding_mb:10", "max_non_split_rounding_mb|20"},
        {"garbage_collection_threshold:0", "garbage_collection_threshold"},
        {"garbage_collection_threshold:1", "garbage_collection_threshold"},
        {"garbage_collection_threshold:1.5", "garbage_collection_threshold"},
        {"garbage_collection_threshold:-0.5", "garbage_collection_threshold"},
        {"garbage_collection_threshold:nan", "garbage_collection_threshold"},
        {"per_process_memory_fraction:1.01", "per_process_memory_fraction"},
        {"per_process_memory_fraction:-0.1", "per_process_memory_fraction"},
        {"per_process_memory_fraction:nan", "per_process_memory_fraction"},
        {"per_process_memory_fraction:inf", "per_process_memory_fraction"},
        {"roundup_power2_divisions:3", "roundup_power2_divisions"},
        {"roundup_power2_divisions:-4", "roundup_power2_divisions"},
        {"roundup_power2_divisions:[1:3]", "roundup_power2_divisions"},
        {"roundup_power2_divisions:[3:4]", "roundup_power2_divisions"},
        {"roundup_power2_divisions:[4:2,2:4]", "roundup_power2_divisions"},
        {"roundup_power2_divisions:[>:4,1:2]", "roundup_power2_divisions"},
        {"roundup_power2_divisions:[]", "roundup_power2_divisions"},
        {"expandable_segments", "expandable_segments"},
        {":True", ":True"},
        {"max_split_size_mb:64,expandable_segments:True", "max_split_size_mb|expandable_segments"},
        {"expandable_segments:True,max_split_size_mb:64", "max_split_size_mb|expandable_segments"},
        // A good key before a bad one: nothing at all is applied.
        {"roundup_power2_divisions:8,expandable_segments:True,no_such_key:1", "no_such_key"},
        {"roundup_power2_divisions:8,max_non_split_rounding_mb:1", "max_non_split_rounding_mb"},
    };
    const std::string before = getConfig();
    for (const Case& c : cases) {
        SCOPED_TRACE(c.conf);
        EXPECT_FAILS(mtiaErrorInvalidValue, mtiaAllocatorSetConfig(c.conf), c.needles);
        EXPECT_EQ(getConfig(), before) << "a rejected setting changed the configuration";
    }
    EXPECT_EQ(memStats().max_split_size, -1);
}

// ---- Roundup: roundup_power2_divisions seen in allocated_bytes ----------------------------------

namespace {
int64_t allocatedFor(size_t request) {
    const mtiaMemoryStats before = memStats();
    void* p = mallocOn(request);
    if (p == nullptr) return -1;
    const int64_t grew = cur(memStats().allocated_bytes) - cur(before.allocated_bytes);
    freeOk(p);
    return grew;
}
}  // namespace

TEST_F(Roundup, SingleValueRoundsToPowerOfTwoDivisions) {
    const size_t req = kMiB + kMiB / 5;  // 1.2 MiB
    EXPECT_EQ(allocatedFor(req),
              static_cast<int64_t>(kMiB + kMiB / 5 + 512 - (kMiB + kMiB / 5) % 512));
    ASSERT_OK(mtiaAllocatorSetConfig("roundup_power2_divisions:4"));
    EXPECT_EQ(allocatedFor(req), static_cast<int64_t>(kMiB + kMiB / 4))
        << "1.2 MiB in quarter steps is 1.25 MiB";
    EXPECT_EQ(allocatedFor(5 * kMiB + 1), static_cast<int64_t>(6 * kMiB))
        << "above 4 MiB the steps are 1 MiB";
    EXPECT_EQ(allocatedFor(2 * kMiB), static_cast<int64_t>(2 * kMiB)) << "a power of two stays";
    EXPECT_EQ(allocatedFor(3000), 3072);  // small requests: quarter steps of 2 KiB
    EXPECT_EQ(allocatedFor(1500), 1536) << "requests up to 4 x 512 bytes keep 512-byte rounding";
    ASSERT_OK(mtiaAllocatorSetConfig("roundup_power2_divisions:1"));
    EXPECT_EQ(allocatedFor(5 * kMiB + 1), static_cast<int64_t>(5 * kMiB + 512))
        << "1 division: plain rounding";
    ASSERT_OK(mtiaAllocatorSetConfig("roundup_power2_divisions:0"));
    EXPECT_EQ(allocatedFor(5 * kMiB + 1), static_cast<int64_t>(5 * kMiB + 512));
}

TEST_F(Roundup, ListGivesEachIntervalItsOwnDivisions) {
    ASSERT_OK(mtiaAllocatorSetConfig("roundup_power2_divisions:[1:2,4:8,>:4]"));
    EXPECT_EQ(allocatedFor(kMiB + kMiB / 5), static_cast<int64_t>(kMiB + kMiB / 2))
        << "[1,2) MiB: halves";
    EXPECT_EQ(allocatedFor(3 * kMiB - 4096), static_cast<int64_t>(3 * kMiB - 4096))
        << "[2,4) MiB is not listed: 512-byte rounding";
    EXPECT_EQ(allocatedFor(5 * kMiB + 1), static_cast<int64_t>(5 * kMiB + kMiB / 2))
        << "[4,8) MiB: eighths";
    EXPECT_EQ(allocatedFor(9 * kMiB), static_cast<int64_t>(10 * kMiB)) << "from 8 MiB on: quarters";
    EXPECT_EQ(allocatedFor(100 * 1000), static_cast<int64_t>(128 * 1024))
        << "below 1 MiB: the first entry (halves)";
}

// ---- ConfigEnv: MTIA_ALLOC_CONF ----------------------------------------------------------------
// Run with MTIA_SIM_MEMORY=256MiB and
// MTIA_ALLOC_CONF=max_split_size_mb:64,max_non_split_rounding_mb:30,
// garbage_collection_threshold:0.75,roundup_power2_divisions:[1:4,>:8],expandable_segments:False,
// per_process_memory_fraction:0.5,release_lock_on_cudamalloc:True,pinned_use_background_threads:False

TEST_F(ConfigEnv, EveryKeyFromTheEnvironmentIsInEffect) {
    if (std::getenv("MTIA_ALLOC_CONF") == nullptr)
        GTEST_SKIP() << "runs with MTIA_ALLOC_CONF set (ctest alloc_config_env)";
    const std::string c = getConfig();
    EXPECT_TRUE(has(c, "max_split_size_mb:64")) << c;
    EXPECT_TRUE(has(c, "max_non_split_rounding_mb:30")) << c;
    EXPECT_TRUE(has(c, "garbage_collection_threshold:0.75")) << c;
    EXPECT_NE(c.find("roundup_power2_divisions:[1:4,2:8,4:8,"), std::string::npos) << c;
    EXPECT_TRUE(has(c, "expandable_segments:False")) << c;
    EXPECT_TRUE(has(c, "per_process_memory_fraction:0.5")) << c;
    EXPECT_TRUE(has(c, "release_lock_on_device_malloc:True")) << c;
    EXPECT_TRUE(has(c, "pinned_use_background_threads:False")) << c;
    EXPECT_EQ(memStats().max_split_size, static_cast<int64_t>(64 * kMiB));

    // roundup_power2_divisions
    EXPECT_EQ(allocatedFor(kMiB + kMiB / 5), static_cast<int64_t>(kMiB + kMiB / 4));
    EXPECT_EQ(allocatedFor(5 * kMiB + 1), static_cast<int64_t>(5 * kMiB + kMiB / 2));
    ASSERT_OK(mtiaEmptyCache());

    // max_split_size_mb: a 70 MiB block is oversize, never split.
    const mtiaMemoryStats s0 = memStats();
    void* big = mallocOn(70 * kMiB);
    ASSERT_NE(big, nullptr);
    const mtiaMemoryStats s1 = memStats();
    EXPECT_EQ(s1.oversize_allocations.current - s0.oversize_allocations.current, 1);
    EXPECT_EQ(s1.oversize_segments.current - s0.oversize_segments.current, 1);

    // per_process_memory_fraction: 128 of the 256 MiB; 70 + 60 would pass it.
    attachObserverOnce();
    void* more = nullptr;
    EXPECT_FAILS(mtiaErrorMemoryAllocation, mtiaMalloc(&more, 60 * kMiB), "memory fraction|limit");
    {
        std::lock_guard lock(observed().mu);
        EXPECT_EQ(observed().total, 128 * kMiB) << "the observer's total is the fraction's limit";
    }
    void* fits = mallocOn(50 * kMiB);
    EXPECT_NE(fits, nullptr);
    freeOk(fits);
    freeOk(big);

    // max_split_size_mb is set, so expandable segments cannot be switched on.
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaAllocatorSetConfig("expandable_segments:True"),
                 "max_split_size_mb|expandable_segments");
}

TEST(ConfigBadEnv, InitialisationFailsNamingTheKey) {
    const char* key = std::getenv("MTIA_TEST_BAD_KEY");
    if (key == nullptr)
        GTEST_SKIP() << "runs with a bad MTIA_ALLOC_CONF (ctest alloc_config_bad_env_*)";
    const std::string needles = std::string("MTIA_ALLOC_CONF|") + key;
    EXPECT_FAILS(mtiaErrorInitializationError, mtiaInit(0), needles.c_str());
    void* p = nullptr;
    EXPECT_FAILS(mtiaErrorInitializationError, mtiaMalloc(&p, 16), needles.c_str());
    char buf[512];
    EXPECT_STATUS(mtiaErrorInitializationError, mtiaAllocatorGetConfig(buf, sizeof buf));
    int count = -1;
    EXPECT_OK(mtiaGetDeviceCount(&count));  // never fails
    EXPECT_EQ(count, 0);
}

// ---- MaxSplit: max_split_size_mb, max_non_split_rounding_mb (MTIA_SIM_MEMORY=256MiB) ----------

TEST_F(MaxSplit, SettingReadsBackInConfigAndStats) {
    EXPECT_EQ(memStats().max_split_size, -1);
    ASSERT_OK(mtiaAllocatorSetConfig("max_split_size_mb:40"));
    EXPECT_TRUE(has(getConfig(), "max_split_size_mb:40")) << getConfig();
    EXPECT_EQ(memStats().max_split_size, static_cast<int64_t>(40 * kMiB));
    if (devices_ > 1) {
        EXPECT_EQ(memStats(1).max_split_size, static_cast<int64_t>(40 * kMiB));
    }
    // The contradiction is rejected, naming the key, whichever call sets which half.
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaAllocatorSetConfig("expandable_segments:True"),
                 "max_split_size_mb|expandable_segments");
    EXPECT_TRUE(has(getConfig(), "expandable_segments:False"));
}

TEST_F(MaxSplit, OversizeBlocksAreNotSplitAndServeOnlyOversizeRequests) {
    ASSERT_OK(mtiaAllocatorSetConfig("max_split_size_mb:40,max_non_split_rounding_mb:20"));
    const mtiaMemoryStats s0 = memStats();
    void* a = mallocOn(50 * kMiB);
    ASSERT_NE(a, nullptr);
    const mtiaMemoryStats s1 = memStats();
    EXPECT_EQ(s1.oversize_allocations.current - s0.oversize_allocations.current, 1);
    EXPECT_EQ(s1.oversize_segments.current - s0.oversize_segments.current, 1);
    EXPECT_EQ(cur(s1.reserved_bytes) - cur(s0.reserved_bytes), static_cast<int64_t>(50 * kMiB));
    freeOk(a);
    const mtiaMemoryStats s2 = memStats();
    EXPECT_EQ(s2.oversize_allocations.current, s0.oversize_allocations.current);
    EXPECT_EQ(s2.oversize_segments.current, s1.oversize_segments.current)
        << "the segment is still cached";

    // A request below the limit never takes the cached oversize block.
    void* small = mallocOn(30 * kMiB);
    EXPECT_NE(small, a);
    EXPECT_EQ(memStats().num_device_alloc - s2.num_device_alloc, 1);
    freeOk(small);

    // An oversize request takes it whole when it wastes less than max_non_split_rounding_mb.
    const mtiaMemoryStats s3 = memStats();
    void* b = mallocOn(45 * kMiB);
    EXPECT_EQ(b, a);
    const mtiaMemoryStats s4 = memStats();
    EXPECT_EQ(s4.num_device_alloc, s3.num_device_alloc);
    EXPECT_EQ(cur(s4.allocated_bytes) - cur(s3.allocated_bytes), static_cast<int64_t>(50 * kMiB))
        << "it was split";
    EXPECT_EQ(cur(s4.inactive_split), cur(s3.inactive_split));
    EXPECT_EQ(s4.oversize_allocations.current - s3.oversize_allocations.current, 1);
    freeOk(b);

    // 41 MiB from a cached 70 MiB block would waste 29 MiB, not less than 20: a segment of its own.
    ASSERT_OK(mtiaEmptyCache());
    void* c = mallocOn(70 * kMiB);
    ASSERT_NE(c, nullptr);
    freeOk(c);
    const mtiaMemoryStats s5 = memStats();
    void* d = mallocOn(41 * kMiB);
    EXPECT_NE(d, c);
    EXPECT_EQ(memStats().num_device_alloc - s5.num_device_alloc, 1);
    // With max_non_split_rounding_mb:30 it may (d stays live, so the 70 MiB block is the only fit).
    ASSERT_OK(mtiaAllocatorSetConfig("max_non_split_rounding_mb:30"));
    const mtiaMemoryStats s6 = memStats();
    void* e = mallocOn(41 * kMiB);
    EXPECT_EQ(e, c);
    EXPECT_EQ(memStats().num_device_alloc, s6.num_device_alloc);
    EXPECT_EQ(cur(memStats().allocated_bytes) - cur(s6.allocated_bytes),
              static_cast<int64_t>(70 * kMiB));
    freeOk(d);
    freeOk(e);
    ASSERT_OK(mtiaAllocatorSetConfig("max_non_split_rounding_mb:20"));
}

TEST_F(MaxSplit, BlocksBelowTheLimitStillSplit) {
    ASSERT_OK(mtiaAllocatorSetConfig("max_split_size_mb:40"));
    const mtiaMemoryStats s0 = memStats();
    void* a = mallocOn(5 * kMiB);
    void* b = mallocOn(5 * kMiB);
    ASSERT_TRUE(a && b);
    EXPECT_EQ(static_cast<char*>(b), static_cast<char*>(a) + 5 * kMiB);
    const mtiaMemoryStats s1 = memStats();
    EXPECT_EQ(s1.num_device_alloc - s0.num_device_alloc, 1);
    EXPECT_EQ(s1.oversize_allocations.current, s0.oversize_allocations.current);
    EXPECT_EQ(s1.oversize_segments.current, s0.oversize_segments.current);
    freeOk(a);
    freeOk(b);
}

TEST_F(MaxSplit, ChangingTheLimitKeepsOversizeCountsBalanced) {
    // A block counted as oversize when it was allocated is counted out when freed, whatever the
    // limit says by then, and one that was not counted in is not counted out; the same for
    // segments.
    ASSERT_OK(mtiaAllocatorSetConfig("max_split_size_mb:40"));
    const mtiaMemoryStats s0 = memStats();
    void* a = mallocOn(50 * kMiB);  // oversize under 40
    ASSERT_NE(a, nullptr);
    ASSERT_OK(mtiaAllocatorSetConfig("max_split_size_mb:100"));
    freeOk(a);
    ASSERT_OK(mtiaEmptyCache());
    const mtiaMemoryStats s1 = memStats();
    EXPECT_EQ(s1.oversize_allocations.current, s0.oversize_allocations.current)
        << "a raised limit left a count";
    EXPECT_EQ(s1.oversize_segments.current, s0.oversize_segments.current)
        << "a raised limit left a count";

    void* b = mallocOn(60 * kMiB);  // not oversize under 100
    ASSERT_NE(b, nullptr);
    ASSERT_OK(mtiaAllocatorSetConfig("max_split_size_mb:55"));
    freeOk(b);
    ASSERT_OK(mtiaEmptyCache());
    const mtiaMemoryStats s2 = memStats();
    EXPECT_EQ(s2.oversize_allocations.current, s1.oversize_allocations.current)
        << "a lowered limit counted out";
    EXPECT_EQ(s2.oversize_segments.current, s1.oversize_segments.current)
        << "a lowered limit counted out";
    EXPECT_GE(s2.oversize_allocations.current, 0);
    EXPECT_GE(s2.oversize_segments.current, 0);
    ASSERT_OK(mtiaAllocatorSetConfig("max_split_size_mb:40"));
}

TEST_F(MaxSplit, OutOfMemoryReleasesCachedOversizeBlocksBeforeEverythingElse) {
    // 256 MiB device. A cached 100 MiB oversize block and a live 60 MiB one leave 96 MiB free; 120
    // MiB fits only once the cached oversize block went back. That is the ladder's oversize step,
    // not the release-everything retry.
    ASSERT_OK(mtiaAllocatorSetConfig("max_split_size_mb:40"));
    ASSERT_EQ(memInfo().total, 256 * kMiB) << "runs with MTIA_SIM_MEMORY=256MiB";
    void* cached = mallocOn(100 * kMiB);
    void* live = mallocOn(60 * kMiB);
    void* small = mallocOn(4096);  // a cached small segment the oversize step leaves alone
    ASSERT_TRUE(cached && live && small);
    freeOk(cached);
    freeOk(small);
    const mtiaMemoryStats s0 = memStats();
    void* p = mallocOn(120 * kMiB);
    ASSERT_NE(p, nullptr);
    const mtiaMemoryStats s1 = memStats();
    EXPECT_EQ(s1.num_alloc_retries, s0.num_alloc_retries) << "the release-everything retry ran";
    EXPECT_EQ(s1.num_ooms, s0.num_ooms);
    EXPECT_EQ(s1.num_device_free - s0.num_device_free, 1);
    EXPECT_EQ(cur(s1.reserved_bytes) - cur(s0.reserved_bytes), static_cast<int64_t>(20 * kMiB));
    EXPECT_EQ(cur(s1.reserved_bytes, mtiaStatSmallPool), cur(s0.reserved_bytes, mtiaStatSmallPool))
        << "the small pool's cached segment was given back too";
    EXPECT_EQ(s1.oversize_segments.current, s0.oversize_segments.current);  // 100 out, 120 in
    freeOk(p);
    freeOk(live);
}

// ---- GarbageCollection (MTIA_SIM_MEMORY=256MiB) -------------------------------------------------

TEST_F(GarbageCollection, OldCachedLargeSegmentsGoBackBeforeGrowthAboveTheThreshold) {
    ASSERT_EQ(memInfo().total, 256 * kMiB) << "runs with MTIA_SIM_MEMORY=256MiB";
    ASSERT_OK(mtiaAllocatorSetConfig("garbage_collection_threshold:0.5"));
    EXPECT_TRUE(has(getConfig(), "garbage_collection_threshold:0.5")) << getConfig();
    ASSERT_OK(mtiaSetMemoryFraction(0.5, 0));  // 128 MiB allowed; collection above 64 MiB reserved

    // Below the threshold nothing is collected: 30 MiB cached + 40 MiB new = 70 MiB only after
    // growth.
    void* first = mallocOn(30 * kMiB);
    ASSERT_NE(first, nullptr);
    freeOk(first);
    const mtiaMemoryStats g0 = memStats();
    void* grow = mallocOn(40 * kMiB);
    ASSERT_NE(grow, nullptr);
    EXPECT_EQ(memStats().num_device_free, g0.num_device_free) << "collected below the threshold";
    freeOk(grow);
    ASSERT_OK(mtiaEmptyCache());

    // Three cached 30 MiB segments (90 MiB reserved): the oldest goes back before the next growth.
    // Growth of the small pool would collect too: give it its cached segment first.
    freeOk(mallocOn(4096));
    void* a = mallocOn(30 * kMiB);
    void* b = mallocOn(30 * kMiB);
    void* c = mallocOn(30 * kMiB);
    ASSERT_TRUE(a && b && c);
    freeOk(a);
    for (int i = 0; i < 20; ++i) freeOk(mallocOn(4096));  // a ages while the allocator searches
    freeOk(b);
    freeOk(c);
    const mtiaMemoryStats s0 = memStats();
    void* d = mallocOn(40 * kMiB);
    ASSERT_NE(d, nullptr);
    const mtiaMemoryStats s1 = memStats();
    EXPECT_EQ(s1.num_device_free - s0.num_device_free, 1)
        << "garbage collection did not free exactly the old segment";
    EXPECT_EQ(s1.num_device_alloc - s0.num_device_alloc, 1);
    EXPECT_EQ(s1.num_alloc_retries, s0.num_alloc_retries)
        << "collection is not the out-of-memory retry";
    EXPECT_EQ(cur(s1.reserved_bytes) - cur(s0.reserved_bytes), static_cast<int64_t>(10 * kMiB));
    // The young ones are still cached.
    void* e = mallocOn(30 * kMiB);
    void* f = mallocOn(30 * kMiB);
    EXPECT_TRUE((e == b && f == c) || (e == c && f == b)) << "a young cached segment was collected";
    EXPECT_EQ(memStats().num_device_alloc, s1.num_device_alloc);
    for (void* p : {d, e, f}) freeOk(p);
    ASSERT_OK(mtiaSetMemoryFraction(1.0, 0));
}

// ---- Fraction (MTIA_SIM_MEMORY=256MiB) ----------------------------------------------------------

TEST_F(Fraction, SetMemoryFractionRefusesGrowthBeyondTheLimit) {
    ASSERT_EQ(memInfo().total, 256 * kMiB) << "runs with MTIA_SIM_MEMORY=256MiB";
    attachObserverOnce();
    ASSERT_OK(mtiaSetMemoryFraction(0.25, 0));  // 64 MiB
    void* a = mallocOn(40 * kMiB);
    ASSERT_NE(a, nullptr);
    const mtiaMemoryStats s0 = memStats();
    int callsBefore;
    {
        std::lock_guard lock(observed().mu);
        callsBefore = observed().calls;
    }
    void* b = nullptr;
    EXPECT_FAILS(mtiaErrorMemoryAllocation, mtiaMalloc(&b, 30 * kMiB),
                 "mtiaMalloc|memory fraction|limit|64.00 MiB");
    EXPECT_GE(memInfo().free, 30 * kMiB) << "the device had room: the fraction refused";
    const mtiaMemoryStats s1 = memStats();
    EXPECT_EQ(s1.num_ooms - s0.num_ooms, 1);
    EXPECT_EQ(s1.num_device_alloc, s0.num_device_alloc);
    {
        std::lock_guard lock(observed().mu);
        EXPECT_EQ(observed().calls, callsBefore + 1);
        EXPECT_EQ(observed().dev, 0);
        EXPECT_EQ(observed().requested, 30 * kMiB);
        EXPECT_EQ(observed().total, 64 * kMiB);
    }
    // Cached memory counts against the limit but goes back when growth needs it.
    freeOk(a);
    void* c = mallocOn(50 * kMiB);
    EXPECT_NE(c, nullptr);
    const mtiaMemoryStats s2 = memStats();
    EXPECT_EQ(s2.num_alloc_retries - s1.num_alloc_retries, 1);
    EXPECT_EQ(s2.num_device_free - s1.num_device_free, 1);
    freeOk(c);
    // Other devices keep their own limit.
    if (devices_ > 1) {
        DeviceScope one(1);
        void* other = mallocOn(100 * kMiB);
        EXPECT_NE(other, nullptr);
        freeOk(other);
    }
    // Fraction 0 refuses every growth.
    ASSERT_OK(mtiaEmptyCache());
    ASSERT_OK(mtiaSetMemoryFraction(0.0, 0));
    void* none = nullptr;
    EXPECT_STATUS(mtiaErrorMemoryAllocation, mtiaMalloc(&none, 4096));
    ASSERT_OK(mtiaSetMemoryFraction(1.0, 0));
    void* back = mallocOn(200 * kMiB);
    EXPECT_NE(back, nullptr);
    freeOk(back);
}

TEST_F(Fraction, NamingPerProcessMemoryFractionAppliesItEvenWhenTheSettingIsUnchanged) {
    // mtiaAllocatorSetConfig applies the keys it is given for every device: naming the fraction
    // applies it again even when the setting's value did not change (mtiaSetMemoryFraction changed
    // it meanwhile).
    ASSERT_EQ(memInfo().total, 256 * kMiB) << "runs with MTIA_SIM_MEMORY=256MiB";
    ASSERT_OK(mtiaAllocatorSetConfig("per_process_memory_fraction:0.25"));
    ASSERT_OK(mtiaSetMemoryFraction(1.0, 0));
    ASSERT_OK(mtiaAllocatorSetConfig("per_process_memory_fraction:0.25"));
    void* p = nullptr;
    EXPECT_FAILS(mtiaErrorMemoryAllocation, mtiaMalloc(&p, 100 * kMiB), "memory fraction");
    if (p != nullptr) freeOk(p);
    ASSERT_OK(mtiaAllocatorSetConfig("per_process_memory_fraction:1"));
    ASSERT_OK(mtiaSetMemoryFraction(1.0, 0));
}

TEST_F(Fraction, PerProcessMemoryFractionSettingLimitsEveryDevice) {
    ASSERT_EQ(memInfo().total, 256 * kMiB) << "runs with MTIA_SIM_MEMORY=256MiB";
    ASSERT_OK(mtiaAllocatorSetConfig("per_process_memory_fraction:0.25"));
    for (int dev = 0; dev < std::min(devices_, 2); ++dev) {
        SCOPED_TRACE(dev);
        DeviceScope scope(dev);
        void* a = mallocOn(40 * kMiB);
        ASSERT_NE(a, nullptr);
        void* b = nullptr;
        EXPECT_FAILS(mtiaErrorMemoryAllocation, mtiaMalloc(&b, 30 * kMiB), "memory fraction|limit");
        freeOk(a);
        ASSERT_OK(mtiaEmptyCache());
    }
    ASSERT_OK(mtiaAllocatorSetConfig("per_process_memory_fraction:1"));
    void* big = mallocOn(200 * kMiB);
    EXPECT_NE(big, nullptr);
    freeOk(big);
}
