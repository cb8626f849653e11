// Conformance: expandable segments (MTIA_ALLOC_CONF=expandable_segments:True,
// MTIA_SIM_MEMORY=256MiB): one segment per stream and pool grows by mapping chunks (20 MiB for the
// large pool, 2 MiB for the small one) right after what is mapped, mtiaEmptyCache unmaps the chunks
// that lie wholly in free blocks, and live blocks keep their addresses and contents through growth
// and shrinking.
#include "alloc_test_util.hpp"

using namespace alloc_test;

namespace {

class Expandable : public AllocTest {
protected:
    void SetUp() override {
        AllocTest::SetUp();
        char buf[1024] = {};
        ASSERT_OK(mtiaAllocatorGetConfig(buf, sizeof buf));
        if (std::string(buf).find("expandable_segments:True") == std::string::npos)
            GTEST_SKIP()
                << "runs with MTIA_ALLOC_CONF=expandable_segments:True (ctest alloc_expandable)";
    }
};

// Writes a pattern into the first and last MiB of a block (its halves when smaller), and checks it.
void mark(void* p, size_t size, unsigned seed) {
    const size_t n = std::min(size / 2, kMiB);
    writePattern(p, n, seed);
    writePattern(static_cast<char*>(p) + size - n, n, seed + 1);
}
::testing::AssertionResult marked(void* p, size_t size, unsigned seed) {
    const size_t n = std::min(size / 2, kMiB);
    ::testing::AssertionResult head = hasPattern(p, n, seed);
    if (!head) return head;
    return hasPattern(static_cast<char*>(p) + size - n, n, seed + 1);
}

}  // namespace

TEST_F(Expandable, LargePoolGrowsAndShrinksInChunksWhileLiveBlocksStayValid) {
    const auto L = mtiaStatLargePool;
    const mtiaMemoryStats s0 = memStats();
    const MemInfo m0 = memInfo();
    char* a = static_cast<char*>(mallocOn(5 * kMiB));
    ASSERT_NE(a, nullptr);
    mark(a, 5 * kMiB, 1);
    const mtiaMemoryStats s1 = memStats();
    EXPECT_EQ(cur(s1.reserved_bytes, L) - cur(s0.reserved_bytes, L),
              static_cast<int64_t>(20 * kMiB))
        << "one chunk";
    EXPECT_EQ(cur(s1.segment, L) - cur(s0.segment, L), 1);
    EXPECT_EQ(s1.num_device_alloc - s0.num_device_alloc, 1);
    EXPECT_EQ(cur(s1.inactive_split), cur(s0.inactive_split))
        << "expandable segments do not count as split";
    EXPECT_EQ(m0.free - memInfo().free, 20 * kMiB);

    // 30 MiB more: placed right after a, one more chunk mapped, still one segment.
    char* b = static_cast<char*>(mallocOn(30 * kMiB));
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b, a + 5 * kMiB) << "growth did not continue the segment";
    mark(b, 30 * kMiB, 3);
    const mtiaMemoryStats s2 = memStats();
    EXPECT_EQ(cur(s2.reserved_bytes, L) - cur(s0.reserved_bytes, L),
              static_cast<int64_t>(40 * kMiB));
    EXPECT_EQ(cur(s2.segment, L) - cur(s0.segment, L), 1);
    EXPECT_EQ(s2.num_device_alloc - s1.num_device_alloc, 1);

    // 50 MiB more: three chunks.
    char* c = static_cast<char*>(mallocOn(50 * kMiB));
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c, b + 30 * kMiB);
    mark(c, 50 * kMiB, 5);
    const mtiaMemoryStats s3 = memStats();
    EXPECT_EQ(cur(s3.reserved_bytes, L) - cur(s0.reserved_bytes, L),
              static_cast<int64_t>(100 * kMiB));
    EXPECT_EQ(s3.num_device_alloc - s2.num_device_alloc, 3);
    EXPECT_TRUE(marked(a, 5 * kMiB, 1));
    EXPECT_TRUE(marked(b, 30 * kMiB, 3));

    // Freeing c and emptying the cache unmaps the chunks wholly inside free memory ([40, 100) MiB);
    // the chunk b shares with c's old start stays.
    freeOk(c);
    EXPECT_EQ(cur(memStats().reserved_bytes), cur(s3.reserved_bytes))
        << "freeing unmapped without emptyCache";
    ASSERT_OK(mtiaEmptyCache());
    const mtiaMemoryStats s4 = memStats();
    EXPECT_EQ(cur(s4.reserved_bytes, L) - cur(s0.reserved_bytes, L),
              static_cast<int64_t>(40 * kMiB));
    EXPECT_EQ(s4.num_device_free - s3.num_device_free, 3);
    EXPECT_EQ(cur(s4.segment, L) - cur(s0.segment, L), 1);
    EXPECT_EQ(m0.free - memInfo().free, 40 * kMiB);
    EXPECT_TRUE(marked(a, 5 * kMiB, 1));
    EXPECT_TRUE(marked(b, 30 * kMiB, 3));

    freeOk(b);
    ASSERT_OK(mtiaEmptyCache());
    const mtiaMemoryStats s5 = memStats();
    EXPECT_EQ(cur(s5.reserved_bytes, L) - cur(s0.reserved_bytes, L),
              static_cast<int64_t>(20 * kMiB));
    EXPECT_TRUE(marked(a, 5 * kMiB, 1));

    // Growing again maps a chunk again at the same addresses; a is untouched.
    char* d = static_cast<char*>(mallocOn(30 * kMiB));
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(d, a + 5 * kMiB);
    mark(d, 30 * kMiB, 7);
    EXPECT_EQ(cur(memStats().reserved_bytes, L) - cur(s0.reserved_bytes, L),
              static_cast<int64_t>(40 * kMiB));
    EXPECT_TRUE(marked(a, 5 * kMiB, 1));
    EXPECT_TRUE(marked(d, 30 * kMiB, 7));

    // A kernel writes through the block too.
    Stream s;
    ASSERT_OK(s.status());
    ASSERT_OK(launchFill(s, reinterpret_cast<float*>(d), 4.0f, 30 * kMiB / sizeof(float)));
    ASSERT_OK(mtiaStreamSynchronize(s));
    float last = 0;
    ASSERT_OK(
        mtiaMemcpy(&last, d + 30 * kMiB - sizeof(float), sizeof last, mtiaMemcpyDeviceToHost));
    EXPECT_EQ(last, 4.0f);

    freeOk(a);
    freeOk(d);
    ASSERT_OK(mtiaEmptyCache());
    const mtiaMemoryStats s6 = memStats();
    EXPECT_EQ(cur(s6.reserved_bytes), cur(s0.reserved_bytes));
    EXPECT_EQ(cur(s6.segment), cur(s0.segment)) << "an all-unmapped segment was not given back";
    EXPECT_EQ(memInfo().free, m0.free);
    EXPECT_EQ(s6.num_device_alloc - s0.num_device_alloc, s6.num_device_free - s0.num_device_free);
}

TEST_F(Expandable, SmallPoolGrowsInTwoMiBChunks) {
    const auto S = mtiaStatSmallPool;
    const mtiaMemoryStats s0 = memStats();
    char* m1 = static_cast<char*>(mallocOn(kMiB));
    char* m2 = static_cast<char*>(mallocOn(kMiB));
    ASSERT_TRUE(m1 && m2);
    EXPECT_EQ(m2, m1 + kMiB);
    EXPECT_EQ(cur(memStats().reserved_bytes, S) - cur(s0.reserved_bytes, S),
              static_cast<int64_t>(2 * kMiB));
    char* m3 = static_cast<char*>(mallocOn(kMiB));
    ASSERT_NE(m3, nullptr);
    EXPECT_EQ(m3, m2 + kMiB);
    const mtiaMemoryStats s1 = memStats();
    EXPECT_EQ(cur(s1.reserved_bytes, S) - cur(s0.reserved_bytes, S),
              static_cast<int64_t>(4 * kMiB));
    EXPECT_EQ(cur(s1.segment, S) - cur(s0.segment, S), 1);
    EXPECT_EQ(s1.num_device_alloc - s0.num_device_alloc, 2);
    mark(m1, kMiB, 11);
    freeOk(m2);
    freeOk(m3);
    ASSERT_OK(mtiaEmptyCache());
    EXPECT_EQ(cur(memStats().reserved_bytes, S) - cur(s0.reserved_bytes, S),
              static_cast<int64_t>(2 * kMiB));
    EXPECT_TRUE(marked(m1, kMiB, 11));
    freeOk(m1);
    ASSERT_OK(mtiaEmptyCache());
    EXPECT_EQ(cur(memStats().reserved_bytes), cur(s0.reserved_bytes));
}

TEST_F(Expandable, EachStreamGrowsItsOwnSegment) {
    Stream other;
    ASSERT_OK(other.status());
    const mtiaMemoryStats s0 = memStats();
    void* a = mallocOn(5 * kMiB);
    void* b = mallocOn(5 * kMiB, other);
    ASSERT_TRUE(a && b);
    const mtiaMemoryStats s1 = memStats();
    EXPECT_EQ(cur(s1.segment, mtiaStatLargePool) - cur(s0.segment, mtiaStatLargePool), 2);
    EXPECT_EQ(cur(s1.reserved_bytes) - cur(s0.reserved_bytes), static_cast<int64_t>(40 * kMiB));
    freeOk(a);
    freeOk(b);
    ASSERT_OK(mtiaEmptyCache());
    EXPECT_EQ(cur(memStats().segment), cur(s0.segment));
}

TEST_F(Expandable, MemoryFractionLimitsMappedChunks) {
    ASSERT_EQ(memInfo().total, 256 * kMiB) << "runs with MTIA_SIM_MEMORY=256MiB";
    ASSERT_OK(mtiaSetMemoryFraction(0.25, 0));  // 64 MiB: three 20 MiB chunks
    void* a = mallocOn(5 * kMiB);
    void* b = mallocOn(50 * kMiB);  // up to 55 MiB: chunks 0 to 2
    ASSERT_TRUE(a && b);
    EXPECT_EQ(cur(memStats().reserved_bytes, mtiaStatLargePool), static_cast<int64_t>(60 * kMiB));
    void* c = nullptr;
    EXPECT_FAILS(mtiaErrorMemoryAllocation, mtiaMalloc(&c, 10 * kMiB), "memory fraction");
    void* d = mallocOn(5 * kMiB);  // what is mapped still serves
    EXPECT_NE(d, nullptr);
    for (void* p : {a, b, d}) freeOk(p);
    ASSERT_OK(mtiaSetMemoryFraction(1.0, 0));
    ASSERT_OK(mtiaEmptyCache());
}

TEST_F(Expandable, OutOfMemoryUnmapsAnotherStreamsFreeChunks) {
    ASSERT_EQ(memInfo().total, 256 * kMiB) << "runs with MTIA_SIM_MEMORY=256MiB";
    Stream a, b;
    ASSERT_OK(a.status());
    ASSERT_OK(b.status());
    void* x = mallocOn(200 * kMiB, a);
    ASSERT_NE(x, nullptr);
    freeOk(x);  // 200 MiB mapped and cached on a
    const mtiaMemoryStats s0 = memStats();
    void* y = mallocOn(100 * kMiB, b);  // 56 MiB are free: a's chunks have to go first
    ASSERT_NE(y, nullptr);
    mark(y, 100 * kMiB, 21);
    const mtiaMemoryStats s1 = memStats();
    EXPECT_EQ(s1.num_alloc_retries - s0.num_alloc_retries, 1);
    EXPECT_EQ(cur(s1.reserved_bytes), static_cast<int64_t>(100 * kMiB));
    EXPECT_EQ(s1.num_ooms, s0.num_ooms);
    EXPECT_EQ(memInfo().free, 156 * kMiB);
    EXPECT_TRUE(marked(y, 100 * kMiB, 21));
    freeOk(y);
    ASSERT_OK(mtiaEmptyCache());
    EXPECT_EQ(cur(memStats().reserved_bytes), 0);
}

TEST_F(Expandable, PrivatePoolSegmentsGrowAndGoBackOnRelease) {
    mtiaMemPoolId_t id{};
    ASSERT_OK(mtiaGraphPoolHandle(&id));
    const mtiaMemoryStats s0 = memStats();
    void* outside = mallocOn(5 * kMiB);  // the default pool's segment
    ASSERT_NE(outside, nullptr);
    freeOk(outside);
    ASSERT_OK(mtiaMemPoolBeginAllocateToPool(0, id, nullptr));
    char* p = static_cast<char*>(mallocOn(5 * kMiB));
    char* q = static_cast<char*>(mallocOn(30 * kMiB));
    ASSERT_TRUE(p && q);
    ASSERT_OK(mtiaMemPoolEndAllocateToPool(0, id));
    EXPECT_NE(p, outside) << "the pool took the default pool's expandable segment";
    EXPECT_EQ(q, p + 5 * kMiB);
    const mtiaMemoryStats s1 = memStats();
    EXPECT_EQ(cur(s1.segment, mtiaStatLargePool) - cur(s0.segment, mtiaStatLargePool), 2);
    EXPECT_EQ(cur(s1.reserved_bytes) - cur(s0.reserved_bytes), static_cast<int64_t>(60 * kMiB));
    freeOk(p);
    ASSERT_OK(mtiaMemPoolRelease(0, id));
    EXPECT_EQ(cur(memStats().reserved_bytes), cur(s1.reserved_bytes))
        << "a live block's segment went back";
    freeOk(q);
    const mtiaMemoryStats s2 = memStats();
    EXPECT_EQ(cur(s2.reserved_bytes) - cur(s0.reserved_bytes), static_cast<int64_t>(20 * kMiB))
        << "the released pool's segment did not go back when its last block was freed";
    EXPECT_EQ(cur(s2.segment) - cur(s0.segment), 1);
    ASSERT_OK(mtiaEmptyCache());
}

TEST_F(Expandable, FragmentationMessageDoesNotSuggestWhatIsOn) {
    ASSERT_EQ(memInfo().total, 256 * kMiB) << "runs with MTIA_SIM_MEMORY=256MiB";
    // Four 5 MiB blocks in the first 20 MiB chunk, two of them freed (holes inside one chunk), and
    // 220 MiB more: 240 MiB mapped, 16 MiB left on the device, less than a chunk.
    void* a = mallocOn(5 * kMiB);
    void* b = mallocOn(5 * kMiB);
    void* c = mallocOn(5 * kMiB);
    void* d = mallocOn(5 * kMiB);
    void* f = mallocOn(220 * kMiB);
    ASSERT_TRUE(a && b && c && d && f);
    freeOk(a);
    freeOk(c);
    void* p = nullptr;
    EXPECT_FAILS(mtiaErrorMemoryAllocation, mtiaMalloc(&p, 8 * kMiB),
                 "10.00 MiB reserved but unallocated|Fragmentation");
    const std::string message = mtiaGetLastErrorMessage();
    EXPECT_EQ(message.find("expandable_segments:True"), std::string::npos)
        << "the message suggests expandable segments, which are on: " << message;
    for (void* x : {b, d, f}) freeOk(x);
}

TEST_F(Expandable, ManyStreamsDoNotRunOutOfAddressSpace) {
    // Every stream and private pool has segments of its own: a reservation takes at most an eighth
    // of the device's address space (the simulated device has four times its memory), so eight
    // streams holding live blocks do not run out of addresses while most of the device is free.
    ASSERT_EQ(memInfo().total, 256 * kMiB) << "runs with MTIA_SIM_MEMORY=256MiB";
    std::vector<std::unique_ptr<Stream>> streams;
    std::vector<void*> live;
    for (int i = 0; i < 8; ++i) {
        SCOPED_TRACE("stream " + std::to_string(i));
        streams.push_back(std::make_unique<Stream>());
        ASSERT_OK(streams.back()->status());
        void* p = nullptr;
        EXPECT_OK(mtiaMallocAsync(&p, 5 * kMiB, *streams.back()));
        if (p != nullptr) live.push_back(p);
    }
    for (void* p : live) freeOk(p);
    ASSERT_OK(mtiaEmptyCache());
}

TEST_F(Expandable, SwitchedOffNewSegmentsArePlain) {
    ASSERT_OK(mtiaAllocatorSetConfig("expandable_segments:False"));
    const mtiaMemoryStats s0 = memStats();
    void* p = mallocOn(12 * kMiB);
    ASSERT_NE(p, nullptr);
    const mtiaMemoryStats s1 = memStats();
    EXPECT_EQ(cur(s1.reserved_bytes) - cur(s0.reserved_bytes), static_cast<int64_t>(12 * kMiB))
        << "a plain segment is the request rounded to 2 MiB, not a 20 MiB chunk";
    freeOk(p);
    ASSERT_OK(mtiaAllocatorSetConfig("expandable_segments:True"));
    ASSERT_OK(mtiaEmptyCache());
}
