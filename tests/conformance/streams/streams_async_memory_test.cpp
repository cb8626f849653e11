// Conformance: asynchronous copies and fills in stream order (mtiaMemcpyAsync, mtiaMemsetAsync,
// mtiaMemcpyPeerAsync), and the synchronous mtiaMemcpy's order on the default stream.
#include "streams_test_util.hpp"

using namespace mtia_test;

namespace {
constexpr uint64_t kN = 256;
}

TEST(AsyncMemory, DeviceToDeviceCopyOrdersBetweenKernels) {
    DeviceFloats src(kN), dst(kN), out(kN);
    for (DeviceFloats* b : {&src, &dst, &out}) ASSERT_OK(b->status());
    Stream s;
    ASSERT_OK(s.status());
    for (int round = 1; round <= 20; ++round) {
        ASSERT_OK(launchFill(s, src, static_cast<float>(round), kN));
        ASSERT_OK(mtiaMemcpyAsync(dst, src, src.bytes(), mtiaMemcpyDeviceToDevice, s));
        ASSERT_OK(launchScale(s, out, dst, 2.0f, kN));
        ASSERT_OK(mtiaMemcpyAsync(src, out, src.bytes(), mtiaMemcpyDefault, s));  // kind inferred
    }
    ASSERT_OK(mtiaStreamSynchronize(s));
    EXPECT_TRUE(allEqual(readBack(out, kN), kN, 40.0f));
    EXPECT_TRUE(allEqual(readBack(src, kN), kN, 40.0f));
}

TEST(AsyncMemory, DeviceToDeviceCopyReturnsBeforeItRuns) {
    DeviceFloats src(kN), dst(kN);
    ASSERT_OK(src.status());
    ASSERT_OK(dst.status());
    ASSERT_OK(mtiaMemset(dst, 0, dst.bytes()));
    Stream s;
    ASSERT_OK(s.status());
    ASSERT_OK(launchFill(s, src, 5.0f, kN));
    ASSERT_OK(mtiaStreamSynchronize(s));
    Latch latch;
    ASSERT_OK(latch.block(s));
    EXPECT_TRUE(returnsWithin(
        kHang,
        [&] { EXPECT_OK(mtiaMemcpyAsync(dst, src, src.bytes(), mtiaMemcpyDeviceToDevice, s)); },
        [&] { latch.open(); }))
        << "a device-to-device mtiaMemcpyAsync waited for its stream";
    EXPECT_TRUE(returnsWithin(
        kHang, [&] { EXPECT_OK(mtiaMemsetAsync(src, 0, src.bytes(), s)); }, [&] { latch.open(); }))
        << "mtiaMemsetAsync waited for its stream";
    std::this_thread::sleep_for(kSettle);
    // The synchronous copy runs on the default stream, which does not wait for s.
    EXPECT_TRUE(allEqual(readBack(dst, kN), kN, 0.0f))
        << "the copy ran before the work queued ahead of it";
    EXPECT_TRUE(allEqual(readBack(src, kN), kN, 5.0f))
        << "the fill ran before the work queued ahead of it";
    latch.open();
    ASSERT_OK(mtiaStreamSynchronize(s));
    EXPECT_TRUE(allEqual(readBack(dst, kN), kN, 5.0f));
    EXPECT_TRUE(allEqual(readBack(src, kN), kN, 0.0f));
}

TEST(AsyncMemory, MemsetAsyncIsStreamOrdered) {
    DeviceFloats p(kN);
    ASSERT_OK(p.status());
    Stream s;
    ASSERT_OK(s.status());
    ASSERT_OK(launchFill(s, p, 1.0f, kN));
    ASSERT_OK(mtiaMemsetAsync(p, 0, p.bytes() / 2, s));  // first half: 0.0f
    ASSERT_OK(launchScale(s, p, p, 3.0f, kN));           // second half: 3.0f
    ASSERT_OK(mtiaMemsetAsync(p.get() + kN / 4, 0x3F, sizeof(float) * kN / 4, s));
    ASSERT_OK(mtiaStreamSynchronize(s));
    std::vector<unsigned char> bytes(p.bytes());
    ASSERT_OK(mtiaMemcpy(bytes.data(), p, p.bytes(), mtiaMemcpyDeviceToHost));
    std::vector<float> got(kN);
    std::memcpy(got.data(), bytes.data(), bytes.size());
    for (uint64_t i = 0; i < kN; ++i) {
        if (i < kN / 4) {
            ASSERT_EQ(got[i], 0.0f) << i;
        } else if (i < kN / 2) {
            for (size_t b = 0; b < sizeof(float); ++b)
                ASSERT_EQ(bytes[i * sizeof(float) + b], 0x3F) << i;
        } else {
            ASSERT_EQ(got[i], 3.0f) << i;
        }
    }
}

TEST(AsyncMemory, AsyncCopiesOrderAgainstEvents) {
    DeviceFloats src(kN), dst(kN);
    ASSERT_OK(src.status());
    ASSERT_OK(dst.status());
    ASSERT_OK(mtiaMemset(dst, 0, dst.bytes()));
    Stream producer, consumer;
    ASSERT_OK(producer.status());
    ASSERT_OK(consumer.status());
    Event produced(mtiaEventDisableTiming), copied(mtiaEventDisableTiming);
    ASSERT_OK(produced.status());
    ASSERT_OK(copied.status());
    Latch latch;
    ASSERT_OK(latch.block(producer));
    ASSERT_OK(launchFill(producer, src, 7.0f, kN));
    ASSERT_OK(mtiaEventRecord(produced, producer));
    ASSERT_OK(mtiaStreamWaitEvent(consumer, produced, 0));
    ASSERT_OK(mtiaMemcpyAsync(dst, src, src.bytes(), mtiaMemcpyDeviceToDevice, consumer));
    ASSERT_OK(mtiaEventRecord(copied, consumer));
    // The producer may overwrite src only after the consumer copied it.
    ASSERT_OK(mtiaStreamWaitEvent(producer, copied, 0));
    ASSERT_OK(mtiaMemsetAsync(src, 0, src.bytes(), producer));
    std::this_thread::sleep_for(kSettle);
    EXPECT_STATUS(mtiaErrorNotReady, mtiaEventQuery(copied));
    EXPECT_TRUE(allEqual(readBack(dst, kN), kN, 0.0f));
    latch.open();
    ASSERT_OK(mtiaStreamSynchronize(producer));
    ASSERT_OK(mtiaStreamSynchronize(consumer));
    EXPECT_TRUE(allEqual(readBack(dst, kN), kN, 7.0f));
    EXPECT_TRUE(allEqual(readBack(src, kN), kN, 0.0f));
}

TEST(AsyncMemory, PageableHostCopiesReturnWhenDone) {
    DeviceFloats d(kN);
    ASSERT_OK(d.status());
    Stream s;
    ASSERT_OK(s.status());
    std::vector<float> host(kN, 4.0f);  // ordinary heap memory, not pinned

    // Host to device: ordered after the blocked op, and done when the call returns.
    {
        Latch latch;
        ASSERT_OK(latch.block(s));
        Async call(
            [&] {
                EXPECT_OK(mtiaMemcpyAsync(d, host.data(), d.bytes(), mtiaMemcpyHostToDevice, s));
            },
            [&] { latch.open(); });
        std::this_thread::sleep_for(kSettle);
        EXPECT_FALSE(call.done())
            << "a pageable copy returned before the work queued ahead of it finished";
        latch.open();
        ASSERT_TRUE(call.waitFor(kHang));
        std::fill(host.begin(), host.end(), -1.0f);  // the caller may reuse the buffer at once
        ASSERT_OK(mtiaStreamSynchronize(s));
        EXPECT_TRUE(allEqual(readBack(d, kN), kN, 4.0f))
            << "the copy read the host buffer after the call returned";
    }
    // Device to host: the data is there when the call returns, without a synchronize.
    {
        Latch latch;
        ASSERT_OK(latch.block(s));
        ASSERT_OK(launchFill(s, d, 9.0f, kN));
        Async call(
            [&] {
                EXPECT_OK(mtiaMemcpyAsync(host.data(), d, d.bytes(), mtiaMemcpyDeviceToHost, s));
            },
            [&] { latch.open(); });
        std::this_thread::sleep_for(kSettle);
        EXPECT_FALSE(call.done())
            << "a pageable copy returned before the work queued ahead of it finished";
        latch.open();
        ASSERT_TRUE(call.waitFor(kHang));
        EXPECT_TRUE(allEqual(host, kN, 9.0f));
    }
    // mtiaMemcpyDefault infers both directions from the pointers.
    std::vector<float> twice(kN, 0.0f);
    std::fill(host.begin(), host.end(), 6.0f);
    ASSERT_OK(mtiaMemcpyAsync(d, host.data(), d.bytes(), mtiaMemcpyDefault, s));
    ASSERT_OK(launchScale(s, d, d, 2.0f, kN));
    ASSERT_OK(mtiaMemcpyAsync(twice.data(), d, d.bytes(), mtiaMemcpyDefault, s));
    EXPECT_TRUE(allEqual(twice, kN, 12.0f));
}

TEST(AsyncMemory, PeerCopyIsStreamOrdered) {
    if (deviceCount() < 2) GTEST_SKIP() << "needs two devices";
    DeviceFloats src1(kN, 1), dst0(kN, 0), back1(kN, 1);
    for (DeviceFloats* b : {&src1, &dst0, &back1}) ASSERT_OK(b->status());
    ASSERT_OK(mtiaMemset(dst0, 0, dst0.bytes()));
    Stream s0(0), s1(1);
    ASSERT_OK(s0.status());
    ASSERT_OK(s1.status());
    Event filled(mtiaEventDisableTiming, 1);
    ASSERT_OK(filled.status());

    Latch latch;
    ASSERT_OK(latch.block(s1));
    ASSERT_OK(launchFill(s1, src1, 4.0f, kN));
    ASSERT_OK(mtiaEventRecord(filled, s1));
    ASSERT_OK(mtiaStreamWaitEvent(s0, filled, 0));
    EXPECT_TRUE(returnsWithin(
        kHang, [&] { EXPECT_OK(mtiaMemcpyPeerAsync(dst0, 0, src1, 1, src1.bytes(), s0)); },
        [&] { latch.open(); }))
        << "mtiaMemcpyPeerAsync waited for its stream";
    ASSERT_OK(launchScale(s0, dst0, dst0, 2.0f, kN));
    std::this_thread::sleep_for(kSettle);
    EXPECT_TRUE(allEqual(readBack(dst0, kN), kN, 0.0f))
        << "the peer copy ran before the event it waits for";
    latch.open();
    ASSERT_OK(mtiaStreamSynchronize(s0));
    EXPECT_TRUE(allEqual(readBack(dst0, kN), kN, 8.0f));

    // The stream may belong to either device: copy back on a stream of device 1.
    ASSERT_OK(mtiaMemcpyPeerAsync(back1, 1, dst0, 0, dst0.bytes(), s1));
    ASSERT_OK(mtiaStreamSynchronize(s1));
    EXPECT_TRUE(allEqual(readBack(back1, kN), kN, 8.0f));
}

TEST(AsyncMemory, SyncMemcpyOrdersOnDefaultStreamOnly) {
    DeviceFloats d(kN);
    ASSERT_OK(d.status());
    mtiaStream_t def = nullptr;
    ASSERT_OK(mtiaGetDefaultStream(0, &def));
    std::vector<float> host(kN, 0.0f);
    {
        Latch latch;
        ASSERT_OK(launchFill(def, d, 1.0f, kN));
        ASSERT_OK(latch.block(def));
        ASSERT_OK(launchFill(def, d, 2.0f, kN));
        Async call(
            [&] { EXPECT_OK(mtiaMemcpy(host.data(), d, d.bytes(), mtiaMemcpyDeviceToHost)); },
            [&] { latch.open(); });
        std::this_thread::sleep_for(kSettle);
        EXPECT_FALSE(call.done())
            << "mtiaMemcpy did not wait for earlier work on the default stream";
        latch.open();
        ASSERT_TRUE(call.waitFor(kHang));
        EXPECT_TRUE(allEqual(host, kN, 2.0f));
    }
    // Work on another stream is not waited for.
    Stream s;
    ASSERT_OK(s.status());
    Latch latch;
    ASSERT_OK(latch.block(s));
    ASSERT_OK(launchFill(s, d, 3.0f, kN));
    EXPECT_TRUE(returnsWithin(
        kHang, [&] { EXPECT_OK(mtiaMemcpy(host.data(), d, d.bytes(), mtiaMemcpyDeviceToHost)); },
        [&] { latch.open(); }))
        << "mtiaMemcpy waited for a non-default stream";
    EXPECT_TRUE(allEqual(host, kN, 2.0f));
    latch.open();
    ASSERT_OK(mtiaStreamSynchronize(s));
    EXPECT_TRUE(allEqual(readBack(d, kN), kN, 3.0f));
}

TEST(AsyncMemory, BadArguments) {
    DeviceFloats a(kN), b(kN);
    ASSERT_OK(a.status());
    ASSERT_OK(b.status());
    Stream s;
    ASSERT_OK(s.status());
    mtiaStream_t dead = nullptr;
    ASSERT_OK(mtiaStreamCreate(&dead));
    ASSERT_OK(mtiaStreamDestroy(dead));
    int local = 0;
    const auto foreign = reinterpret_cast<mtiaStream_t>(&local);
    std::vector<float> host(kN);
    EXPECT_FAILS(mtiaErrorInvalidHandle,
                 mtiaMemcpyAsync(a, b, a.bytes(), mtiaMemcpyDeviceToDevice, dead), "stream");
    EXPECT_FAILS(mtiaErrorInvalidHandle,
                 mtiaMemcpyAsync(a, b, a.bytes(), mtiaMemcpyDeviceToDevice, foreign), "stream");
    EXPECT_FAILS(mtiaErrorInvalidHandle, mtiaMemsetAsync(a, 0, a.bytes(), dead), "stream");
    EXPECT_FAILS(mtiaErrorInvalidValue,
                 mtiaMemcpyAsync(a, b, a.bytes(), static_cast<mtiaMemcpyKind>(99), s), "kind");
    EXPECT_FAILS(mtiaErrorInvalidValue,
                 mtiaMemcpyAsync(nullptr, b, a.bytes(), mtiaMemcpyDeviceToDevice, s), "dst");
    EXPECT_STATUS(mtiaErrorInvalidValue,
                  mtiaMemcpyAsync(a, b, a.bytes() + 4, mtiaMemcpyDeviceToDevice, s));
    EXPECT_STATUS(mtiaErrorInvalidValue,
                  mtiaMemcpyAsync(a, host.data(), a.bytes(), mtiaMemcpyDeviceToDevice, s));
    EXPECT_STATUS(mtiaErrorInvalidValue, mtiaMemsetAsync(host.data(), 0, 16, s));
    EXPECT_STATUS(mtiaErrorInvalidValue, mtiaMemsetAsync(a, 0, a.bytes() + 1, s));
    if (deviceCount() >= 2) {
        DeviceFloats c(kN, 1);
        ASSERT_OK(c.status());
        EXPECT_FAILS(mtiaErrorInvalidHandle, mtiaMemcpyPeerAsync(c, 1, a, 0, a.bytes(), dead),
                     "stream");
        EXPECT_STATUS(mtiaErrorInvalidDevice, mtiaMemcpyPeerAsync(c, 7, a, 0, a.bytes(), s));
        EXPECT_STATUS(mtiaErrorInvalidDevice, mtiaMemcpyPeerAsync(c, 1, a, -3, a.bytes(), s));
        EXPECT_STATUS(mtiaErrorInvalidValue,
                      mtiaMemcpyPeerAsync(c, 0, a, 0, a.bytes(), s));  // c is on device 1
        EXPECT_STATUS(mtiaErrorInvalidValue, mtiaMemcpyPeerAsync(c, 1, a, 0, a.bytes() + 4, s));
    }
    EXPECT_STATUS(mtiaErrorInvalidValue,
                  mtiaMemcpyPeerAsync(a.get() + 1, 0, a, 0, 16, s));  // overlapping
    EXPECT_STATUS(mtiaErrorInvalidValue, mtiaMemcpyPeerAsync(a, 0, host.data(), 0, 16, s));
    // Nothing was queued and nothing is poisoned.
    EXPECT_OK(mtiaMemcpyAsync(a, b, a.bytes(), mtiaMemcpyDeviceToDevice, s));
    EXPECT_OK(mtiaStreamSynchronize(s));
}
