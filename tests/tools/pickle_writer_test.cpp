// mtia-mem's pickle writer, read back by our reader: integers at every encoding's edges, short and
// long strings, repeated strings fetched from the memo, containers past the 1000-item batches,
// tuples. (python3 reads the writer's snapshots in the end-to-end test.)
#include "allocator/snapshot/pickle_writer.hpp"
#include "pickle_reader.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

using namespace mtia::mem::pickle;

TEST(PickleWriter, ValuesReadBack) {
    const int64_t ints[] = {0,
                            1,
                            255,
                            256,
                            65535,
                            65536,
                            -1,
                            -256,
                            INT32_MIN,
                            INT32_MAX,
                            int64_t{INT32_MAX} + 1,
                            int64_t{INT32_MIN} - 1,
                            int64_t{1} << 40,
                            -(int64_t{1} << 40),
                            0x7f3a00001000,
                            INT64_MAX,
                            INT64_MIN};
    const std::string longText(300, 'x');
    std::string bytes;
    Writer w(bytes);
    w.beginList();
    for (int64_t v : ints) {
        w.item();
        w.integer(v);
    }
    w.item();
    w.unsignedInteger(uint64_t{1} << 62);
    for (const char* s : {"alloc", "alloc", "", "free_requested", "alloc"}) {
        w.item();
        w.string(s);
    }
    w.item();
    w.string(longText);
    w.item();
    w.real(-2.25);
    w.item();
    w.boolean(true);
    w.item();
    w.none();
    w.item();
    w.integer(3);
    w.integer(4);
    w.tuple2();
    w.item();
    w.beginDict();
    for (int k = 0; k < 1500; ++k) {
        w.item();
        w.string("k" + std::to_string(k));
        w.integer(k);
    }
    w.end();
    w.item();
    w.beginList();
    for (int k = 0; k < 2500; ++k) {
        w.item();
        w.integer(k);
    }
    w.end();
    w.end();
    w.finish();

    auto doc = parse(bytes);
    const auto& items = *doc->root().asList();
    size_t i = 0;
    for (int64_t v : ints) EXPECT_EQ(*items.at(i++).asInt(), v);
    EXPECT_EQ(*items.at(i++).asInt(), int64_t{1} << 62);
    for (const char* s : {"alloc", "alloc", "", "free_requested", "alloc"})
        EXPECT_EQ(*items.at(i++).asString(), s);
    EXPECT_EQ(items.at(i - 1).asString()->data(), items.at(i - 5).asString()->data())
        << "a repeated string is memoized";
    EXPECT_EQ(*items.at(i++).asString(), longText);
    EXPECT_EQ(*items.at(i++).asFloat(), -2.25);
    EXPECT_EQ(*items.at(i++).asBool(), true);
    EXPECT_TRUE(items.at(i++).isNone());
    const Value& pair = items.at(i++);
    EXPECT_EQ(pair.kind, Value::Kind::Tuple);
    EXPECT_EQ(*pair.asList()->at(1).asInt(), 4);
    const Value& dict = items.at(i++);
    ASSERT_NE(dict.asDict(), nullptr);
    EXPECT_EQ(dict.asDict()->items.size(), 1500u);
    EXPECT_EQ(*dict.get("k1499")->asInt(), 1499);
    const Value& list = items.at(i++);
    ASSERT_EQ(list.asList()->size(), 2500u);
    EXPECT_EQ(*list.asList()->at(2499).asInt(), 2499);
    EXPECT_EQ(i, items.size());
}

TEST(PickleWriter, UnsignedBeyondInt64IsNineBytes) {
    // Valid for Python (LONG1 of 9 bytes); our reader takes it as an unsigned 64-bit value, and
    // refuses integers beyond (a ninth byte that is not 0).
    std::string bytes;
    Writer w(bytes);
    w.unsignedInteger(UINT64_MAX);
    w.finish();
    EXPECT_EQ(bytes, std::string("\x80\x04\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00.", 14));
    const auto doc = parse(bytes);
    ASSERT_NE(doc->root().asUInt(), nullptr);
    EXPECT_EQ(*doc->root().asUInt(), UINT64_MAX);
    bytes[12] = 1;
    EXPECT_THROW(parse(bytes), Error);
}

}  // namespace
