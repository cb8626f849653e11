// The allocator's settings (MTIA_ALLOC_CONF): PyTorch's keys and syntax, every key's errors and the
// effective settings written back.
#include "allocator/alloc_config.hpp"
#include "core/error.hpp"

#include <gtest/gtest.h>

#include <string>

using mtia::allocator::AllocConfig;

namespace {

constexpr size_t kMiB = AllocConfig::kMiB;

// The message of the InvalidValue error that parsing conf raises ("" when it parses).
std::string errorOf(std::string_view conf, const AllocConfig& base = {}) {
    try {
        AllocConfig::parse(conf, base);
    } catch (const mtia::Error& e) {
        EXPECT_EQ(e.code(), mtiaErrorInvalidValue) << conf;
        return e.what();
    }
    return "";
}

#define EXPECT_REFUSED_NAMING(conf, needle)                                                        \
    do {                                                                                           \
        const std::string message = errorOf(conf);                                                 \
        EXPECT_NE(message.find(needle), std::string::npos) << (conf) << " -> " << message;         \
    } while (0)

}  // namespace

TEST(AllocConfig, DefaultsAndEmptySettings) {
    const AllocConfig d;
    EXPECT_EQ(d.maxSplitSize, AllocConfig::kUnlimited);
    EXPECT_EQ(d.maxNonSplitRounding, 20 * kMiB);
    EXPECT_EQ(d.garbageCollectionThreshold, 0.0);
    EXPECT_FALSE(d.expandableSegments);
    EXPECT_EQ(d.perProcessMemoryFraction, 1.0);
    EXPECT_EQ(d.roundupDivisionsFor(5 * kMiB), 0u);
    EXPECT_EQ(AllocConfig::parse(""), d);
    EXPECT_EQ(AllocConfig::parse("  \t "), d);
}

TEST(AllocConfig, EveryKeyTakesEffect) {
    const AllocConfig c = AllocConfig::parse(
        "max_split_size_mb:128, max_non_split_rounding_mb : 64,garbage_collection_threshold:0.6,"
        "roundup_power2_divisions:4,per_process_memory_fraction:0.5,release_lock_on_device_malloc:"
        "True,"
        "pinned_use_background_threads:True");
    EXPECT_EQ(c.maxSplitSize, 128 * kMiB);
    EXPECT_EQ(c.maxNonSplitRounding, 64 * kMiB);
    EXPECT_DOUBLE_EQ(c.garbageCollectionThreshold, 0.6);
    for (size_t size : {size_t{512}, kMiB, 3 * kMiB, size_t{1} << 40})
        EXPECT_EQ(c.roundupDivisionsFor(size), 4u);
    EXPECT_DOUBLE_EQ(c.perProcessMemoryFraction, 0.5);
    EXPECT_TRUE(c.releaseLockOnDeviceMalloc);
    EXPECT_TRUE(c.pinnedUseBackgroundThreads);
    EXPECT_TRUE(AllocConfig::parse("expandable_segments:True").expandableSegments);
    // CUDA's spelling of the lock key is accepted too.
    EXPECT_TRUE(AllocConfig::parse("release_lock_on_cudamalloc:True").releaseLockOnDeviceMalloc);
}

TEST(AllocConfig, LaterSettingsApplyOnTopOfEarlierOnes) {
    const AllocConfig base =
        AllocConfig::parse("max_non_split_rounding_mb:40,expandable_segments:True");
    const AllocConfig c =
        AllocConfig::parse("expandable_segments:False,max_split_size_mb:200", base);
    EXPECT_EQ(c.maxNonSplitRounding, 40 * kMiB);  // kept from base
    EXPECT_FALSE(c.expandableSegments);
    EXPECT_EQ(c.maxSplitSize, 200 * kMiB);
    EXPECT_EQ(AllocConfig::parse("max_split_size_mb:30,max_split_size_mb:60").maxSplitSize,
              60 * kMiB);  // last wins
}

TEST(AllocConfig, RoundupDivisionsPerInterval) {
    // Intervals start at 1, 2, 4, ... MiB; the first entry also covers everything below it, '>' the
    // rest.
    const AllocConfig c = AllocConfig::parse("roundup_power2_divisions:[256:1,512:2,>:8]");
    EXPECT_EQ(c.roundupDivisionsFor(1000), 1u);      // below 1 MiB: the first interval
    EXPECT_EQ(c.roundupDivisionsFor(3 * kMiB), 1u);  // filled below 256 MiB
    EXPECT_EQ(c.roundupDivisionsFor(256 * kMiB), 1u);
    EXPECT_EQ(c.roundupDivisionsFor(511 * kMiB), 1u);
    EXPECT_EQ(c.roundupDivisionsFor(512 * kMiB), 2u);
    EXPECT_EQ(c.roundupDivisionsFor(1023 * kMiB), 2u);
    EXPECT_EQ(c.roundupDivisionsFor(1024 * kMiB), 8u);
    EXPECT_EQ(c.roundupDivisionsFor(size_t{1} << 45), 8u);  // the last interval is open-ended
    // Without '>', intervals past the last entry keep plain rounding.
    const AllocConfig d = AllocConfig::parse("roundup_power2_divisions:[1:4,2:8]");
    EXPECT_EQ(d.roundupDivisionsFor(kMiB), 4u);
    EXPECT_EQ(d.roundupDivisionsFor(2 * kMiB), 8u);
    EXPECT_EQ(d.roundupDivisionsFor(4 * kMiB), 0u);
    // Only '>': every interval.
    EXPECT_EQ(AllocConfig::parse("roundup_power2_divisions:[>:2]").roundupDivisionsFor(7 * kMiB),
              2u);
}

TEST(AllocConfig, BadValuesNameTheirKey) {
    EXPECT_REFUSED_NAMING("max_split_size_mb:19", "max_split_size_mb");  // PyTorch's floor is 20
    EXPECT_REFUSED_NAMING("max_split_size_mb:-5", "max_split_size_mb");
    EXPECT_REFUSED_NAMING("max_split_size_mb:12Q", "max_split_size_mb");
    EXPECT_REFUSED_NAMING("max_split_size_mb:99999999999999999999", "max_split_size_mb");
    EXPECT_REFUSED_NAMING("max_non_split_rounding_mb:1", "max_non_split_rounding_mb");
    EXPECT_REFUSED_NAMING("garbage_collection_threshold:0", "garbage_collection_threshold");
    EXPECT_REFUSED_NAMING("garbage_collection_threshold:1", "garbage_collection_threshold");
    EXPECT_REFUSED_NAMING("garbage_collection_threshold:nan", "garbage_collection_threshold");
    EXPECT_REFUSED_NAMING("per_process_memory_fraction:1.5", "per_process_memory_fraction");
    EXPECT_REFUSED_NAMING("per_process_memory_fraction:-0.1", "per_process_memory_fraction");
    EXPECT_REFUSED_NAMING("roundup_power2_divisions:3",
                          "roundup_power2_divisions");  // not a power of two
    EXPECT_REFUSED_NAMING("roundup_power2_divisions:[256:3]", "roundup_power2_divisions");
    EXPECT_REFUSED_NAMING("roundup_power2_divisions:[300:2]",
                          "'300' is not");  // interval not a power of two
    EXPECT_REFUSED_NAMING("roundup_power2_divisions:[512:2,256:1]", "increasing");  // out of order
    EXPECT_REFUSED_NAMING("roundup_power2_divisions:[>:2,512:1]",
                          "roundup_power2_divisions");  // '>' not last
    EXPECT_REFUSED_NAMING("roundup_power2_divisions:[]", "roundup_power2_divisions");
    EXPECT_REFUSED_NAMING("roundup_power2_divisions:[1:2", "roundup_power2_divisions");  // unclosed
    // Booleans are exactly True or False, as in PyTorch.
    EXPECT_REFUSED_NAMING("expandable_segments:true", "expandable_segments");
    EXPECT_REFUSED_NAMING("expandable_segments:1", "True or False");
    EXPECT_REFUSED_NAMING("release_lock_on_cudamalloc:yes", "release_lock_on_cudamalloc");
    EXPECT_REFUSED_NAMING("pinned_use_background_threads:", "pinned_use_background_threads");
}

TEST(AllocConfig, UnknownKeysAndMalformedSettings) {
    EXPECT_REFUSED_NAMING("max_split_size:128", "'max_split_size' is not known");
    EXPECT_REFUSED_NAMING("backend:cudaMallocAsync", "'backend' is not known");
    EXPECT_REFUSED_NAMING("expandable_segments", "not of the form key:value");
    EXPECT_REFUSED_NAMING(":True", "not of the form key:value");
    EXPECT_REFUSED_NAMING("expandable_segments:True,",
                          "not of the form key:value");  // an empty setting
    EXPECT_REFUSED_NAMING("expandable_segments:True,,max_split_size_mb:40",
                          "not of the form key:value");
}

TEST(AllocConfig, ContradictionsAreRefusedWhicheverComesFirst) {
    // PyTorch issues #119452 and #123548: max_split_size_mb means nothing for expandable segments.
    EXPECT_REFUSED_NAMING("max_split_size_mb:64,expandable_segments:True", "cannot be combined");
    EXPECT_REFUSED_NAMING("expandable_segments:True,max_split_size_mb:64", "max_split_size_mb:64");
    const AllocConfig split = AllocConfig::parse("max_split_size_mb:64");
    EXPECT_NE(errorOf("expandable_segments:True", split).find("cannot be combined"),
              std::string::npos);
    // A bad setting after good ones refuses the whole string.
    EXPECT_NE(errorOf("max_non_split_rounding_mb:80,bogus:1", split).find("'bogus' is not known"),
              std::string::npos);
}

TEST(AllocConfig, FormatWritesBackTheEffectiveSettings) {
    const AllocConfig d;
    EXPECT_EQ(d.format(),
              "max_non_split_rounding_mb:20,roundup_power2_divisions:0,expandable_segments:False,"
              "per_process_memory_fraction:1,release_lock_on_device_malloc:False,pinned_use_"
              "background_threads:False");
    for (const char* conf :
         {"", "max_split_size_mb:128,garbage_collection_threshold:0.75",
          "roundup_power2_divisions:[256:1,512:2,>:8],per_process_memory_fraction:0.3",
          "expandable_segments:True,release_lock_on_cudamalloc:True,pinned_use_background_threads:"
          "True",
          "roundup_power2_divisions:16,max_non_split_rounding_mb:4096"}) {
        const AllocConfig c = AllocConfig::parse(conf);
        EXPECT_EQ(AllocConfig::parse(c.format()), c) << conf << " -> " << c.format();
    }
    EXPECT_NE(AllocConfig::parse("max_split_size_mb:128").format().find("max_split_size_mb:128"),
              std::string::npos);
}
