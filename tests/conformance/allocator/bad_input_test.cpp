// Conformance: bad input at every entry point of the caching allocator returns the documented error
// with a message naming the call and the argument, and changes nothing.
#include "alloc_test_util.hpp"

#include <cmath>
#include <cstddef>
#include <limits>

using namespace alloc_test;

namespace {

class AllocBadInput : public AllocTest {};

mtiaStream_t deadStream() {
    mtiaStream_t s = nullptr;
    EXPECT_OK(mtiaStreamCreate(&s));
    EXPECT_OK(mtiaStreamDestroy(s));
    return s;
}

}  // namespace

TEST_F(AllocBadInput, MallocAndMallocAsync) {
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaMalloc(nullptr, 16), "mtiaMalloc|ptr");
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaMallocAsync(nullptr, 16, nullptr),
                 "mtiaMallocAsync|ptr");
    const mtiaMemoryStats s0 = memStats();
    void* p = reinterpret_cast<void*>(0x10);
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaMalloc(&p, SIZE_MAX), "mtiaMalloc|too large");
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaMalloc(&p, SIZE_MAX - 511), "mtiaMalloc|too large");
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaMallocAsync(&p, SIZE_MAX, nullptr), "mtiaMallocAsync");
    const mtiaMemoryStats s1 = memStats();
    EXPECT_EQ(s1.num_ooms, s0.num_ooms) << "a size that cannot be represented is not out of memory";
    EXPECT_EQ(s1.num_device_alloc, s0.num_device_alloc);
    EXPECT_EQ(cur(s1.allocation), cur(s0.allocation));
    // More than the device has is out of memory, not a bad value.
    EXPECT_FAILS(mtiaErrorMemoryAllocation, mtiaMalloc(&p, SIZE_MAX / 4),
                 "mtiaMalloc|out of memory");
    EXPECT_FAILS(mtiaErrorInvalidHandle, mtiaMallocAsync(&p, 16, deadStream()),
                 "mtiaMallocAsync|stream");
    int garbage = 0;
    EXPECT_FAILS(mtiaErrorInvalidHandle,
                 mtiaMallocAsync(&p, 16, reinterpret_cast<mtiaStream_t>(&garbage)),
                 "mtiaMallocAsync");
    EXPECT_EQ(cur(memStats().allocation), cur(s0.allocation));
}

TEST_F(AllocBadInput, FreeOfWhatIsNotALiveAllocation) {
    EXPECT_OK(mtiaFree(nullptr));
    char* p = static_cast<char*>(mallocOn(4096));
    ASSERT_NE(p, nullptr);
    const mtiaMemoryStats s0 = memStats();
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaFree(p + 16), "mtiaFree|inside");
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaFree(p + 4096 + 512),
                 "mtiaFree");  // the free rest of the segment
    int onStack = 0;
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaFree(&onStack), "mtiaFree|ptr");
    void* onHeap = std::malloc(64);
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaFree(onHeap), "mtiaFree");
    std::free(onHeap);
    EXPECT_EQ(cur(memStats().allocation), cur(s0.allocation))
        << "a refused free changed the statistics";
    ASSERT_OK(mtiaFree(p));
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaFree(p), "mtiaFree|already freed");
    const mtiaMemoryStats s1 = memStats();
    EXPECT_EQ(cur(s1.allocation), cur(s0.allocation) - 1);
    // The double free did not corrupt the cache: the block serves once, not twice.
    void* a = mallocOn(4096);
    void* b = mallocOn(4096);
    EXPECT_EQ(a, p);
    EXPECT_NE(b, p);
    freeOk(a);
    freeOk(b);
}

TEST_F(AllocBadInput, RecordStream) {
    Stream s;
    ASSERT_OK(s.status());
    char* p = static_cast<char*>(mallocOn(4096));
    ASSERT_NE(p, nullptr);
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaRecordStream(nullptr, s), "mtiaRecordStream|ptr");
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaRecordStream(p + 512, s), "mtiaRecordStream|ptr");
    int onStack = 0;
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaRecordStream(&onStack, s), "mtiaRecordStream|ptr");
    EXPECT_FAILS(mtiaErrorInvalidHandle, mtiaRecordStream(p, deadStream()),
                 "mtiaRecordStream|stream");
    EXPECT_OK(mtiaRecordStream(p, nullptr));  // the current stream: the allocating one here
    freeOk(p);
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaRecordStream(p, s), "mtiaRecordStream|ptr");  // freed
    // None of the refused calls left a use behind: the block is reused at once.
    void* q = mallocOn(4096);
    EXPECT_EQ(q, p);
    freeOk(q);
}

TEST_F(AllocBadInput, MemoryFraction) {
    const double bad[] = {std::nan(""), -0.1, 1.0001, -std::numeric_limits<double>::infinity(),
                          std::numeric_limits<double>::infinity()};
    for (double f : bad)
        EXPECT_FAILS(mtiaErrorInvalidValue, mtiaSetMemoryFraction(f, 0),
                     "mtiaSetMemoryFraction|fraction");
    EXPECT_FAILS(mtiaErrorInvalidDevice, mtiaSetMemoryFraction(0.5, 99),
                 "mtiaSetMemoryFraction|99");
    EXPECT_FAILS(mtiaErrorInvalidDevice, mtiaSetMemoryFraction(0.5, -1), "mtiaSetMemoryFraction");
    // Nothing was applied: a large allocation still fits.
    void* p = mallocOn(200 * kMiB);
    EXPECT_NE(p, nullptr);
    freeOk(p);
}

TEST_F(AllocBadInput, StatsCalls) {
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaMemoryGetStats(0, nullptr), "mtiaMemoryGetStats|out");
    mtiaMemoryStats s = MTIA_MEMORY_STATS_INIT;
    s.structSize = 0;
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaMemoryGetStats(0, &s), "mtiaMemoryGetStats|structSize");
    s.structSize = 3;
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaMemoryGetStats(0, &s), "structSize");
    s = MTIA_MEMORY_STATS_INIT;
    EXPECT_FAILS(mtiaErrorInvalidDevice, mtiaMemoryGetStats(99, &s), "mtiaMemoryGetStats|99");
    EXPECT_FAILS(mtiaErrorInvalidDevice, mtiaMemoryGetStats(-1, &s), "mtiaMemoryGetStats");
    EXPECT_FAILS(mtiaErrorInvalidDevice, mtiaMemoryResetPeakStats(99), "mtiaMemoryResetPeakStats");
    EXPECT_FAILS(mtiaErrorInvalidDevice, mtiaMemoryResetAccumulatedStats(99),
                 "mtiaMemoryResetAccumulatedStats");

    // An older, smaller struct: the library writes exactly structSize bytes.
    void* keep = mallocOn(4096);
    ASSERT_NE(keep, nullptr);
    struct Padded {
        mtiaMemoryStats s;
        unsigned char after[64];
    } padded;
    const size_t older = offsetof(mtiaMemoryStats, segment);  // structSize and allocation[3] only
    std::memset(&padded, 0xA5, sizeof padded);
    padded.s.structSize = static_cast<uint32_t>(older);
    ASSERT_OK(mtiaMemoryGetStats(0, &padded.s));
    EXPECT_EQ(padded.s.structSize, older);
    EXPECT_GE(padded.s.allocation[mtiaStatAll].current, 1);
    const auto* bytes = reinterpret_cast<const unsigned char*>(&padded);
    for (size_t i = older; i < sizeof padded; ++i)
        ASSERT_EQ(bytes[i], 0xA5) << "byte " << i << " was written";
    freeOk(keep);
}

TEST_F(AllocBadInput, ConfigCalls) {
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaAllocatorSetConfig(nullptr),
                 "mtiaAllocatorSetConfig|conf");
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaAllocatorGetConfig(nullptr, 100),
                 "mtiaAllocatorGetConfig|buf");
    char full[4096] = {};
    ASSERT_OK(mtiaAllocatorGetConfig(full, sizeof full));
    const size_t need = std::strlen(full) + 1;
    ASSERT_GT(need, 1u);
    for (size_t len : {size_t{0}, size_t{1}, need / 2, need - 1}) {
        SCOPED_TRACE(len);
        std::vector<char> buf(need + 32, '\x5A');
        EXPECT_FAILS(mtiaErrorInvalidValue, mtiaAllocatorGetConfig(buf.data(), len),
                     "mtiaAllocatorGetConfig|len");
        for (size_t i = len; i < buf.size(); ++i)
            ASSERT_EQ(buf[i], '\x5A') << "byte " << i << " past len was written";
    }
    std::vector<char> exact(need + 8, '\x5A');
    ASSERT_OK(mtiaAllocatorGetConfig(exact.data(), need));
    EXPECT_STREQ(exact.data(), full);
    EXPECT_EQ(exact[need], '\x5A');
}

TEST_F(AllocBadInput, ObserverAndCallbackRegistration) {
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaAttachOutOfMemoryObserver(nullptr, nullptr),
                 "mtiaAttachOutOfMemoryObserver|cb");
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaAttachFreeMemoryCallback(nullptr, nullptr),
                 "mtiaAttachFreeMemoryCallback|cb");
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaGraphPoolHandle(nullptr), "mtiaGraphPoolHandle|id");
    size_t total = 0;
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaMemGetInfo(nullptr, &total), "mtiaMemGetInfo|free");
    size_t free = 0;
    EXPECT_FAILS(mtiaErrorInvalidValue, mtiaMemGetInfo(&free, nullptr), "mtiaMemGetInfo|total");
}

TEST_F(AllocBadInput, PoolCalls) {
    mtiaMemPoolId_t id{};
    ASSERT_OK(mtiaGraphPoolHandle(&id));
    EXPECT_FAILS(mtiaErrorInvalidValue,
                 mtiaMemPoolBeginAllocateToPool(0, mtiaMemPoolId_t{0, 0}, nullptr),
                 "mtiaMemPoolBeginAllocateToPool|id");
    EXPECT_FAILS(mtiaErrorInvalidDevice, mtiaMemPoolBeginAllocateToPool(99, id, nullptr),
                 "mtiaMemPoolBeginAllocateToPool|99");
    EXPECT_FAILS(mtiaErrorInvalidHandle, mtiaMemPoolBeginAllocateToPool(0, id, deadStream()),
                 "mtiaMemPoolBeginAllocateToPool|filter");
    EXPECT_FAILS(mtiaErrorInvalidDevice, mtiaMemPoolEndAllocateToPool(99, id),
                 "mtiaMemPoolEndAllocateToPool|99");
    EXPECT_FAILS(mtiaErrorNotFound, mtiaMemPoolEndAllocateToPool(0, id),
                 "mtiaMemPoolEndAllocateToPool");
    EXPECT_FAILS(mtiaErrorInvalidDevice, mtiaMemPoolRelease(99, id), "mtiaMemPoolRelease|99");
    EXPECT_FAILS(mtiaErrorNotFound, mtiaMemPoolRelease(0, id), "mtiaMemPoolRelease");
    EXPECT_FAILS(mtiaErrorNotFound, mtiaMemPoolRelease(0, mtiaMemPoolId_t{0, 0}),
                 "mtiaMemPoolRelease");
}
