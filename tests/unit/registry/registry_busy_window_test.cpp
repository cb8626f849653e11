// Utilisation windows (busy_window.hpp): what one reading of a slot's busy
// time and checkpoints says, and the checkpoints an owner keeps as it adds
// busy time.
#include "registry_test_util.hpp"

#include "platform/registry/busy_window.hpp"

#include <gtest/gtest.h>

namespace mtia::registry::test {
namespace {

constexpr uint64_t kMs = 1000000;  // ns

TEST(RegistryBusyWindow, ShareSinceTheNewerCheckpointOnceItIsHalfASecondOld) {
    const uint64_t t0 = 5000 * kMs;
    const uint64_t older = makeBusyMark(t0, 0);
    const uint64_t newer = makeBusyMark(t0 + 1000 * kMs, 400 * kMs);
    // 600 ms after the newer checkpoint, 300 ms more of busy time: half of the window.
    EXPECT_DOUBLE_EQ(recentBusyShare(700 * kMs, older, newer, t0 + 1600 * kMs), 0.5);
    // 200 ms after it the newer one is too young: the window starts at the older one (1200 ms, 600
    // busy).
    EXPECT_DOUBLE_EQ(recentBusyShare(600 * kMs, older, newer, t0 + 1200 * kMs), 0.5);
    // Without an older one a young checkpoint is all there is.
    EXPECT_DOUBLE_EQ(recentBusyShare(500 * kMs, 0, newer, t0 + 1200 * kMs), 0.5);
}

TEST(RegistryBusyWindow, AnIdleProcessFadesOut) {
    const uint64_t t0 = 10 * kMs;
    const uint64_t older = makeBusyMark(t0, 0);
    const uint64_t newer =
        makeBusyMark(t0 + 1000 * kMs, 1000 * kMs);  // flat out for a second, then idle
    EXPECT_DOUBLE_EQ(recentBusyShare(1000 * kMs, older, newer, t0 + 1500 * kMs), 0.0);
    const double later = recentBusyShare(1000 * kMs, older, newer, t0 + 61000 * kMs);
    EXPECT_EQ(later, 0.0);  // nothing was added after the newer checkpoint
    // Busy until the last moment, then a minute of nothing: at most 2 s of busy time in the window.
    const double minute = recentBusyShare(2000 * kMs, older, newer, t0 + 61000 * kMs);
    EXPECT_GT(minute, 0.0);
    EXPECT_LT(minute, 0.03);
}

TEST(RegistryBusyWindow, NothingToSayWithoutCheckpointsOrAcrossAReset) {
    EXPECT_EQ(recentBusyShare(123 * kMs, 0, 0, 5000 * kMs), 0.0);
    const uint64_t newer = makeBusyMark(1000 * kMs, 800 * kMs);
    EXPECT_EQ(recentBusyShare(100 * kMs, 0, newer, 2000 * kMs), 0.0);  // busy time went backwards
    EXPECT_EQ(recentBusyShare(900 * kMs, 0, newer, 900 * kMs), 0.0);   // checkpoint from the future
    EXPECT_EQ(recentBusyShare(900 * kMs, 0, newer, 1000 * kMs), 0.0);  // empty window
}

TEST(RegistryBusyWindow, MillisecondCountersWrapAround) {
    const uint64_t wrap = (uint64_t{1} << 32) * kMs;  // where the 32-bit millisecond fields wrap
    const uint64_t newer = makeBusyMark(wrap - 300 * kMs, wrap - 100 * kMs);
    EXPECT_DOUBLE_EQ(recentBusyShare(wrap + 200 * kMs, 0, newer, wrap + 700 * kMs), 0.3);
    EXPECT_NE(makeBusyMark(0, 0), 0u);  // 0 means "no checkpoint"
}

TEST(RegistryBusyWindow, TheOwnerCheckpointsAtMostOnceASecond) {
    const MachineSpec spec = uniqueMachine();
    auto registry = openOrFail(spec);
    ASSERT_TRUE(registry->reserve(0, kMiB));  // registers: the window starts here
    std::unique_ptr<Registry> reader;
    ASSERT_TRUE(Registry::openReadOnly(spec.objectName(geteuid()), reader));
    auto marks = [&] {
        const auto records = reader->processes();
        EXPECT_EQ(records.size(), 1u);
        return records.empty() ? DeviceFigures{} : records[0].devices[0];
    };
    const DeviceFigures registered = marks();
    EXPECT_EQ(registered.busyMarks[0], 0u);
    ASSERT_NE(registered.busyMarks[1], 0u);
    const uint64_t t0 = uint64_t{busyMarkTimeMs(registered.busyMarks[1])} * kMs;
    EXPECT_EQ(busyMarkBusyMs(registered.busyMarks[1]), 0u);

    registry->addBusy(0, 300 * kMs, t0 + 400 * kMs);  // within the second: no new checkpoint
    EXPECT_EQ(marks().busyMarks[1], registered.busyMarks[1]);
    registry->addBusy(0, 500 * kMs,
                      t0 + 1100 * kMs);  // due: the registration mark becomes the older one
    const DeviceFigures rotated = marks();
    EXPECT_EQ(rotated.busyMarks[0], registered.busyMarks[1]);
    EXPECT_EQ(busyMarkTimeMs(rotated.busyMarks[1]),
              busyMarkTimeMs(makeBusyMark(t0 + 1100 * kMs, 0)));
    EXPECT_EQ(busyMarkBusyMs(rotated.busyMarks[1]), 800u);
    EXPECT_EQ(rotated.busyNs, 800 * kMs);
    // 700 ms after the newer checkpoint, 350 ms more of busy time: 50 %.
    registry->addBusy(0, 350 * kMs, t0 + 1800 * kMs);
    const DeviceFigures now = marks();
    EXPECT_DOUBLE_EQ(
        recentBusyShare(now.busyNs, now.busyMarks[0], now.busyMarks[1], t0 + 1800 * kMs), 0.5);
    removeMachine(spec);
}

}  // namespace
}  // namespace mtia::registry::test
