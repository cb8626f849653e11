#include "core/handle_table.hpp"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace mtia {
namespace {

TEST(CoreHandleTable, LookupReturnsTheObject) {
    HandleTable<int> t(kTagStream);
    uint64_t h = t.insert(std::make_shared<int>(7));
    ASSERT_NE(h, 0u);
    ASSERT_TRUE(t.lookup(h));
    EXPECT_EQ(*t.lookup(h), 7);
}

TEST(CoreHandleTable, StaleAndDoubleRemovedHandlesFail) {
    HandleTable<int> t(kTagStream);
    uint64_t h = t.insert(std::make_shared<int>(1));
    EXPECT_TRUE(t.remove(h));
    EXPECT_FALSE(t.lookup(h));
    EXPECT_FALSE(t.remove(h));
    // The slot is reused with a new generation; the old handle stays dead.
    uint64_t h2 = t.insert(std::make_shared<int>(2));
    EXPECT_NE(h, h2);
    EXPECT_FALSE(t.lookup(h));
    EXPECT_EQ(*t.lookup(h2), 2);
}

TEST(CoreHandleTable, ForeignHandlesFail) {
    HandleTable<int> streams(kTagStream);
    HandleTable<int> events(kTagEvent);
    uint64_t h = streams.insert(std::make_shared<int>(1));
    EXPECT_FALSE(events.lookup(h));  // a stream handle passed as an event
    int local = 0;
    EXPECT_FALSE(streams.lookup(reinterpret_cast<uintptr_t>(&local)));  // a real pointer
    EXPECT_FALSE(streams.lookup(0));
    EXPECT_FALSE(streams.lookup(h + 1));  // index out of range
}

TEST(CoreHandleTable, ObjectOutlivesRemovalWhileReferenced) {
    HandleTable<int> t(kTagStream);
    uint64_t h = t.insert(std::make_shared<int>(5));
    auto held = t.lookup(h);
    t.remove(h);
    EXPECT_EQ(*held, 5);
}

TEST(CoreHandleTable, ConcurrentInsertLookupRemove) {
    HandleTable<int> t(kTagStream);
    std::vector<std::thread> threads;
    for (int i = 0; i < 8; ++i)
        threads.emplace_back([&, i] {
            for (int k = 0; k < 2000; ++k) {
                uint64_t h = t.insert(std::make_shared<int>(i));
                auto p = t.lookup(h);
                ASSERT_TRUE(p);
                ASSERT_EQ(*p, i);
                ASSERT_TRUE(t.remove(h));
            }
        });
    for (auto& th : threads) th.join();
    EXPECT_EQ(t.size(), 0u);
}

}  // namespace
}  // namespace mtia
