// Conformance: event timing (streams-graphs-anchors.md (c), items 25-31). Tolerances are generous:
// these run on loaded two-core machines and under sanitizers; nothing asserts on speed.
#include <cmath>

#include "streams_test_util.hpp"

using namespace mtia_test;

namespace {

mtiaError_t launchHostSleep(mtiaStream_t s, Clock::duration d) {
    return launchHost(s, [d] { std::this_thread::sleep_for(d); });
}

}  // namespace

TEST(Timing, T25_ElapsedAroundHostFunc) {
    Stream s;
    ASSERT_OK(s.status());
    Event start, end;
    ASSERT_OK(start.status());
    ASSERT_OK(end.status());
    ASSERT_OK(mtiaEventRecord(start, s));
    ASSERT_OK(launchHostSleep(s, 20ms));
    ASSERT_OK(mtiaEventRecord(end, s));
    ASSERT_OK(mtiaEventSynchronize(end));
    float elapsed = -1.0f;
    ASSERT_OK(mtiaEventElapsedTime(&elapsed, start, end));
    EXPECT_TRUE(std::isfinite(elapsed));
    EXPECT_GE(elapsed, 19.0f) << "elapsed time around a 20 ms host function";
    EXPECT_LT(elapsed, 500.0f)
        << "elapsed time around a 20 ms host function (unit not milliseconds?)";
}

TEST(Timing, T26_DisableTimingIsRejected) {
    Stream s;
    ASSERT_OK(s.status());
    Event timed, untimed(mtiaEventDisableTiming),
        untimed2(mtiaEventDisableTiming | mtiaEventBlockingSync);
    for (Event* e : {&timed, &untimed, &untimed2}) {
        ASSERT_OK(e->status());
        ASSERT_OK(mtiaEventRecord(*e, s));
    }
    ASSERT_OK(mtiaStreamSynchronize(s));
    float ms = 12345.0f;
    EXPECT_FAILS(mtiaErrorInvalidHandle, mtiaEventElapsedTime(&ms, timed, untimed), "end");
    EXPECT_FAILS(mtiaErrorInvalidHandle, mtiaEventElapsedTime(&ms, untimed, timed), "start");
    EXPECT_STATUS(mtiaErrorInvalidHandle, mtiaEventElapsedTime(&ms, untimed, untimed2));
    EXPECT_EQ(ms, 12345.0f) << "a failed call wrote its out-pointer";
    EXPECT_OK(mtiaEventElapsedTime(&ms, timed, timed));
    EXPECT_EQ(ms, 0.0f) << "an event against itself";
}

TEST(Timing, T27_NeverRecordedIsRejected) {
    Stream s;
    ASSERT_OK(s.status());
    Event recorded, fresh, fresh2;
    for (Event* e : {&recorded, &fresh, &fresh2}) ASSERT_OK(e->status());
    ASSERT_OK(mtiaEventRecord(recorded, s));
    ASSERT_OK(mtiaEventSynchronize(recorded));
    float ms = 12345.0f;
    EXPECT_FAILS(mtiaErrorInvalidHandle, mtiaEventElapsedTime(&ms, recorded, fresh), "end");
    EXPECT_FAILS(mtiaErrorInvalidHandle, mtiaEventElapsedTime(&ms, fresh, recorded), "start");
    EXPECT_STATUS(mtiaErrorInvalidHandle, mtiaEventElapsedTime(&ms, fresh, fresh2));
    EXPECT_EQ(ms, 12345.0f);
}

TEST(Timing, T28_IncompleteIsNotReadyWithoutBlocking) {
    Stream s;
    ASSERT_OK(s.status());
    Event start, end, late;
    for (Event* e : {&start, &end, &late}) ASSERT_OK(e->status());
    Latch latch;
    ASSERT_OK(mtiaEventRecord(start, s));
    ASSERT_OK(latch.block(s));
    ASSERT_OK(mtiaEventRecord(end, s));
    ASSERT_OK(mtiaEventRecord(late, s));
    ASSERT_OK(mtiaEventSynchronize(start));
    float ms = 12345.0f;
    const bool returned = returnsWithin(
        kHang,
        [&] {
            EXPECT_STATUS(mtiaErrorNotReady,
                          mtiaEventElapsedTime(&ms, start, end));  // end incomplete
            EXPECT_STATUS(mtiaErrorNotReady,
                          mtiaEventElapsedTime(&ms, end, start));  // start incomplete
            EXPECT_STATUS(mtiaErrorNotReady,
                          mtiaEventElapsedTime(&ms, end, late));  // both incomplete
        },
        [&] { latch.open(); });
    EXPECT_TRUE(returned) << "mtiaEventElapsedTime blocked on an incomplete event";
    EXPECT_EQ(ms, 12345.0f);
    latch.open();
    ASSERT_OK(mtiaEventSynchronize(late));
    EXPECT_OK(mtiaEventElapsedTime(&ms, start, end));
    EXPECT_GE(ms, 0.0f);
}

TEST(Timing, T29_BackToBackRecordsOnEmptyStream) {
    // Nothing lies between the two records, so the difference is tiny. A loaded machine may preempt
    // the engine between them once; the smallest of a few tries must be under 1 ms, and none
    // negative.
    Stream s;
    ASSERT_OK(s.status());
    Event a, b;
    ASSERT_OK(a.status());
    ASSERT_OK(b.status());
    float best = 1e9f;
    for (int attempt = 0; attempt < 20 && best >= 1.0f; ++attempt) {
        ASSERT_OK(mtiaEventRecord(a, s));
        ASSERT_OK(mtiaEventRecord(b, s));
        ASSERT_OK(mtiaEventSynchronize(b));
        float ms = -1.0f;
        ASSERT_OK(mtiaEventElapsedTime(&ms, a, b));
        EXPECT_GE(ms, 0.0f) << "two records in order on one stream gave a negative time";
        best = std::min(best, ms);
    }
    EXPECT_LT(best, 1.0f);
}

TEST(Timing, T30_DifferentStreamsSignedDifference) {
    Stream a, b;
    ASSERT_OK(a.status());
    ASSERT_OK(b.status());
    Event start, end;
    ASSERT_OK(start.status());
    ASSERT_OK(end.status());
    Latch latch;
    ASSERT_OK(latch.block(a));
    ASSERT_OK(mtiaEventRecord(start, a));  // completes after the latch opens
    ASSERT_OK(mtiaEventRecord(end, b));    // b is idle: completes now
    ASSERT_OK(mtiaEventSynchronize(end));
    std::this_thread::sleep_for(10ms);
    latch.open();
    ASSERT_OK(mtiaEventSynchronize(start));
    float forward = 0.0f, backward = 0.0f;
    ASSERT_OK(mtiaEventElapsedTime(&forward, start, end));
    ASSERT_OK(mtiaEventElapsedTime(&backward, end, start));
    EXPECT_LT(forward, -9.0f)
        << "end completed at least 10 ms before start: the signed difference is negative";
    EXPECT_GT(backward, 9.0f);
    EXPECT_NEAR(forward, -backward, 1e-3f);

    if (deviceCount() < 2) return;
    Stream s1(1);
    ASSERT_OK(s1.status());
    Event other(mtiaEventDefault, 1);
    ASSERT_OK(other.status());
    ASSERT_OK(mtiaEventRecord(other, s1));
    ASSERT_OK(mtiaEventSynchronize(other));
    float ms = 12345.0f;
    EXPECT_STATUS(mtiaErrorInvalidValue, mtiaEventElapsedTime(&ms, start, other));
    EXPECT_STATUS(mtiaErrorInvalidValue, mtiaEventElapsedTime(&ms, other, start));
    EXPECT_EQ(ms, 12345.0f);
}

TEST(Timing, T31_ReRecordedStartIsUsed) {
    Stream s;
    ASSERT_OK(s.status());
    Event start, end, firstStart;
    for (Event* e : {&start, &end, &firstStart}) ASSERT_OK(e->status());
    ASSERT_OK(mtiaEventRecord(start, s));
    ASSERT_OK(mtiaEventRecord(firstStart, s));  // a second marker at the same point
    ASSERT_OK(launchHostSleep(s, 30ms));
    ASSERT_OK(mtiaEventRecord(end, s));
    ASSERT_OK(mtiaEventSynchronize(end));
    float first = 0.0f;
    ASSERT_OK(mtiaEventElapsedTime(&first, start, end));
    EXPECT_GE(first, 29.0f);

    ASSERT_OK(mtiaEventRecord(start, s));  // re-record after the measurement
    ASSERT_OK(launchHostSleep(s, 10ms));
    ASSERT_OK(mtiaEventRecord(end, s));
    ASSERT_OK(mtiaEventSynchronize(end));
    float moved = 0.0f, second = 0.0f, total = 0.0f;
    ASSERT_OK(mtiaEventElapsedTime(&moved, firstStart, start));
    ASSERT_OK(mtiaEventElapsedTime(&second, start, end));
    ASSERT_OK(mtiaEventElapsedTime(&total, firstStart, end));
    EXPECT_GE(moved, 29.0f) << "the start event still holds its first record";
    EXPECT_GE(second, 9.0f);
    EXPECT_NEAR(moved + second, total, 0.01f);
}
