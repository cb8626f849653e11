// The pickle reader of mtia-mem: every opcode a memory snapshot uses, and malformed input rejected
// with the offset and what is wrong. Pickles are written by hand here (byte strings); the
// end-to-end test also reads pickles that python3 wrote.
#include "pickle_reader.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

using namespace mtia::mem::pickle;

// A byte string literal, embedded NULs included.
template <size_t N>
std::string B(const char (&s)[N]) {
    return std::string(s, N - 1);
}

const std::string kProto4 = B("\x80\x04");

std::unique_ptr<Document> doc(const std::string& s) {
    return parse(s);
}

std::string errorOf(const std::string& s) {
    try {
        parse(s);
    } catch (const Error& e) {
        return e.what();
    }
    return "(accepted)";
}

#define EXPECT_ERROR(bytes, text)                                                                  \
    EXPECT_NE(errorOf(bytes).find(text), std::string::npos) << errorOf(bytes)

int64_t intOf(const std::string& s) {
    auto d = doc(s);
    EXPECT_NE(d->root().asInt(), nullptr);
    return d->root().asInt() ? *d->root().asInt() : -12345;
}

std::string stringOf(const std::string& s) {
    auto d = doc(s);
    EXPECT_TRUE(d->root().asString().has_value());
    return d->root().asString() ? std::string(*d->root().asString()) : "(none)";
}

TEST(PickleReader, ScalarsOfEveryKind) {
    EXPECT_TRUE(doc(kProto4 + "N.")->root().isNone());           // NONE
    EXPECT_EQ(*doc(kProto4 + "\x88.")->root().asBool(), true);   // NEWTRUE
    EXPECT_EQ(*doc(kProto4 + "\x89.")->root().asBool(), false);  // NEWFALSE
    EXPECT_EQ(intOf(kProto4 + "K\xff."), 255);                   // BININT1
    EXPECT_EQ(intOf(kProto4 + B("M\x34\x12.")), 0x1234);         // BININT2
    EXPECT_EQ(intOf(kProto4 + B("J\xfe\xff\xff\xff.")), -2);     // BININT
    EXPECT_EQ(intOf(kProto4 + B("J\xff\xff\xff\x7f.")), INT32_MAX);
    // LONG1: little-endian two's complement of 0 to 8 bytes.
    EXPECT_EQ(intOf(kProto4 + B("\x8a\x05\x00\x00\x00\x00\x01.")), int64_t{1} << 32);
    EXPECT_EQ(intOf(kProto4 + B("\x8a\x06\x00\x00\x00\x10\x3a\x7f.")), int64_t{0x7f3a10000000});
    EXPECT_EQ(intOf(kProto4 + B("\x8a\x02\xff\xff.")), -1);
    EXPECT_EQ(intOf(kProto4 + B("\x8a\x02\xff\x00.")), 255);
    EXPECT_EQ(intOf(kProto4 + B("\x8a\x00.")), 0);
    EXPECT_EQ(intOf(kProto4 + B("\x8a\x08\xff\xff\xff\xff\xff\xff\xff\x7f.")), INT64_MAX);
    EXPECT_EQ(intOf(kProto4 + B("\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x80.")), INT64_MIN);
    // BINFLOAT is big-endian: 1.5 = 0x3ff8000000000000.
    EXPECT_EQ(*doc(kProto4 + B("G\x3f\xf8\x00\x00\x00\x00\x00\x00."))->root().asFloat(), 1.5);
    EXPECT_EQ(stringOf(kProto4 + "\x8c\x05hello."), "hello");        // SHORT_BINUNICODE
    EXPECT_EQ(stringOf(kProto4 + B("X\x02\x00\x00\x00hi.")), "hi");  // BINUNICODE
    EXPECT_EQ(stringOf(kProto4 + B("\x8d\x01\x00\x00\x00\x00\x00\x00\x00x.")), "x");  // BINUNICODE8
    EXPECT_EQ(stringOf(kProto4 + B("X\x03\x00\x00\x00\xc3\xa9t.")), "\xc3\xa9t");     // UTF-8 as is
    // Every protocol from 2 to 5 starts the same way.
    for (char p : {'\x02', '\x03', '\x04', '\x05'})
        EXPECT_EQ(intOf(std::string("\x80") + p + "K\x07."), 7);
}

TEST(PickleReader, ContainersMemoAndFrames) {
    // {"a": [1, 2, (3,)], "b": <the same list>} with FRAME, MEMOIZE, MARK/APPENDS, SETITEMS,
    // TUPLE1, BINGET.
    const std::string p = kProto4 + B("\x95\x1a\x00\x00\x00\x00\x00\x00\x00") + "}\x94(" +
                          "\x8c\x01"
                          "a\x94]\x94(K\x01K\x02K\x03\x85\x94"
                          "e" +
                          "\x8c\x01"
                          "bh\x02u.";
    auto d = doc(p);
    const Value* a = d->root().get("a");
    const Value* b = d->root().get("b");
    ASSERT_TRUE(a && b && a->asList() && b->asList());
    ASSERT_EQ(a->asList()->size(), 3u);
    EXPECT_EQ(*(*a->asList())[1].asInt(), 2);
    ASSERT_NE((*a->asList())[2].asList(), nullptr);
    EXPECT_EQ((*a->asList())[2].kind, Value::Kind::Tuple);
    EXPECT_EQ(*(*(*a->asList())[2].asList())[0].asInt(), 3);
    EXPECT_EQ(a->asList(), b->asList()) << "BINGET hands out the same list, as Python does";

    // APPEND, EMPTY_TUPLE, MARK+TUPLE, TUPLE2, TUPLE3, BINPUT, LONG_BINPUT, LONG_BINGET:
    // (([7, (), (1, 2), T], T), <the same list>, "x") with T = (1, 2, 3)
    const std::string q = kProto4 +
                          B("]q\x00K\x07"
                            "a)a(K\x01K\x02ta") +
                          "K\x01K\x02K\x03\x87" +
                          B("r\x05\x00\x00\x00"
                            "aj\x05\x00\x00\x00\x86h\x00\x8c\x01x\x87.");
    auto w = doc(q);
    ASSERT_EQ(w->root().kind, Value::Kind::Tuple);
    const auto& top = *w->root().asList();
    ASSERT_EQ(top.size(), 3u);
    ASSERT_EQ(top[1].kind, Value::Kind::List);
    const auto& list = *top[1].asList();
    ASSERT_EQ(list.size(), 4u);
    EXPECT_EQ(*list[0].asInt(), 7);
    EXPECT_TRUE(list[1].asList()->empty());
    EXPECT_EQ(list[2].asList()->size(), 2u);
    EXPECT_EQ(list[3].asList()->size(), 3u);
    const auto& pair = *top[0].asList();
    ASSERT_EQ(pair.size(), 2u);
    EXPECT_EQ(pair[0].asList(), top[1].asList());   // BINGET 0
    EXPECT_EQ(pair[1].asList(), list[3].asList());  // LONG_BINGET 5
    EXPECT_EQ(*top[2].asString(), "x");

    // SETITEM, DICT and LIST (protocol 0/1 forms MemoryViz.js reads too), and a later key winning.
    auto r = doc(kProto4 + "}\x8c\x01kK\x09s.");
    EXPECT_EQ(*r->root().get("k")->asInt(), 9);
    EXPECT_EQ(r->root().get("missing"), nullptr);
    auto dl = doc(kProto4 + "(\x8c\x01kK\x01\x8c\x01kK\x02\x8c\x01l(K\x05ld.");
    EXPECT_EQ(*dl->root().get("k")->asInt(), 2);
    EXPECT_EQ(*dl->root().get("l")->asList()->at(0).asInt(), 5);
    EXPECT_TRUE(doc(kProto4 + ").")->root().asList()->empty());
    // A sparse LONG_BINPUT index (Python's memo is a dict) and a MEMOIZE after it.
    auto m = doc(kProto4 +
                 B("]r\xe8\x03\x00\x00\x94K\x01"
                   "a") +
                 B("j\xe8\x03\x00\x00h\x01\x87."));
    ASSERT_EQ(m->root().asList()->size(), 3u);
    EXPECT_EQ(m->root().asList()->at(0).asList()->size(), 1u);
    EXPECT_EQ(m->root().asList()->at(0).asList(), m->root().asList()->at(1).asList());
    EXPECT_EQ(m->root().asList()->at(0).asList(), m->root().asList()->at(2).asList());
}

TEST(PickleReader, RejectsMalformedInput) {
    EXPECT_ERROR("N.", "not a pickle of protocol 2");
    EXPECT_ERROR("", "not a pickle of protocol 2");
    EXPECT_ERROR(B("\x80\x01N."), "pickle protocol 1");
    EXPECT_ERROR(B("\x80\x06N."), "pickle protocol 6");
    EXPECT_ERROR(kProto4 + "N", "ends without STOP");
    EXPECT_ERROR(kProto4 + "NN.", "STOP with 2 values");
    EXPECT_ERROR(kProto4 + ".", "STOP with 0 values");
    EXPECT_ERROR(kProto4 + "(K\x01.", "1 open MARKs");
    // Code is never data: GLOBAL, REDUCE, BUILD, INST, STACK_GLOBAL refused at their offset.
    EXPECT_ERROR(kProto4 + "cos\nsystem\n.", "offset 2: opcode 0x63");
    EXPECT_ERROR(kProto4 + "NR.", "offset 3: opcode 0x52");
    EXPECT_ERROR(kProto4 + "N\x93.", "opcode 0x93");
    EXPECT_ERROR(kProto4 + "Nb.", "opcode 0x62");
    // Bytes and protocol-0 text forms: never in a snapshot (MemoryViz.js reads neither).
    EXPECT_ERROR(kProto4 + "C\x01z.", "offset 2: opcode 0x43");
    EXPECT_ERROR(kProto4 + "I1\n.", "opcode 0x49");
    // Lengths past the end of the input.
    EXPECT_ERROR(kProto4 + "\x8c\x09short.", "offset 2: needs 9 more bytes, 6 left");
    EXPECT_ERROR(kProto4 + B("X\xff\xff\xff\x7f"), "needs 2147483647 more bytes");
    EXPECT_ERROR(kProto4 + B("\x8d\xff\xff\xff\xff\xff\xff\xff\xff"), "more bytes");
    EXPECT_ERROR(kProto4 + "J\x01", "needs 4 more bytes");
    EXPECT_ERROR(kProto4 + "G\x01\x02", "needs 8 more bytes");
    EXPECT_ERROR(kProto4 + B("\x8a\x04\x01\x02"), "needs 4 more bytes");
    EXPECT_ERROR(kProto4 + B("\x95\x40\x00\x00\x00\x00\x00\x00\x00N."),
                 "FRAME of 64 bytes, 2 left");
    EXPECT_ERROR(B("\x80"), "not a pickle");
    // Integers beyond 64 bits.
    EXPECT_ERROR(kProto4 + B("\x8a\x09\x01\x02\x03\x04\x05\x06\x07\x08\x09."),
                 "LONG1 integer of 9 bytes");
    EXPECT_ERROR(kProto4 + B("\x8a\xff"), "LONG1 integer of 255 bytes");
    // Stack and memo misuse.
    EXPECT_ERROR(kProto4 + "a.", "stack underflow");
    EXPECT_ERROR(kProto4 + "Na.", "stack underflow");
    EXPECT_ERROR(kProto4 + "](a.", "stack underflow");  // APPEND may not reach under a MARK
    EXPECT_ERROR(kProto4 + "K\x01K\x02"
                           "a.",
                 "APPEND to something that is not a list");
    EXPECT_ERROR(kProto4 + ")K\x02"
                           "a.",
                 "not a list");  // tuples are immutable
    EXPECT_ERROR(kProto4 + "]K\x01K\x02s.", "SETITEM on something that is not a dict");
    EXPECT_ERROR(kProto4 + "}(K\x01u.", "a key without a value");
    EXPECT_ERROR(kProto4 + "(K\x01u.", "SETITEMS without a dict");
    EXPECT_ERROR(kProto4 + "(K\x01"
                           "e.",
                 "APPENDS without a list");
    EXPECT_ERROR(kProto4 + "e.", "no MARK");
    EXPECT_ERROR(kProto4 + "t.", "no MARK");
    EXPECT_ERROR(kProto4 + "h\x03.", "memo index 3 was never set");
    EXPECT_ERROR(kProto4 + B("j\x00\x00\x00\x10."), "memo index 268435456 was never set");
    EXPECT_ERROR(kProto4 + "\x94.", "stack underflow");
    EXPECT_ERROR(kProto4 + "(\x85.", "stack underflow");
    EXPECT_ERROR(kProto4 + "K\x01\x87.", "stack underflow");
}

TEST(PickleReader, ValueBudget) {
    // One byte per value: the stack's values alone would cost 16 bytes per byte of file. Refused
    // once they pass 6 bytes per byte plus 32 MiB, with a message that says why.
    const size_t n = 4'000'000;
    EXPECT_EQ(mtia::mem::pickle::valueBudget(n + 4), 6 * (n + 4) + (size_t{32} << 20));
    EXPECT_ERROR(kProto4 + "(" + std::string(n, 'N') + "l.",
                 "more values than a file of 4000005 bytes can hold");
    EXPECT_ERROR(kProto4 + "(" + std::string(n, ']') + "l.", "more values than a file");
    // The same count of small integers in a list (two bytes each, as snapshots hold them) is read.
    std::string ints = kProto4 + "(";
    for (size_t i = 0; i < n / 2; ++i) ints += B("K\x07");
    auto d = doc(ints + "l.");
    EXPECT_EQ(d->root().asList()->size(), n / 2);
}

TEST(PickleReader, DeepNestingIsBounded) {
    // 100000 MARKs: refused with a message, not a crash.
    EXPECT_ERROR(kProto4 + std::string(100000, '('), "more than 65536 nested MARKs");
    // Lists nested half a million deep (each new list appended into the one under it) and a list
    // that contains itself: read and freed without recursion. (Half a million: two bytes per list
    // is far denser than a snapshot, and a million would pass the reader's value budget;
    // ValueBudget.)
    std::string deep = kProto4 + std::string(500'000, ']') + std::string(499'999, 'a') + ".";
    auto d = doc(deep);
    const Value* v = &d->root();
    for (int i = 0; i < 1000; ++i) {
        ASSERT_NE(v->asList(), nullptr);
        ASSERT_EQ(v->asList()->size(), 1u);
        v = &v->asList()->at(0);
    }
    auto self = doc(kProto4 + B("]\x94h\x00"
                                "a."));
    EXPECT_EQ(self->root().asList()->at(0).asList(), self->root().asList());
    // The memo hands out the same string: a million fetches of a 1 KiB string cost no copies.
    std::string fetches = kProto4 + "](X" + B("\x00\x04\x00\x00") + std::string(1024, 's') + "\x94";
    for (int i = 0; i < 1'000'000; ++i) fetches += B("h\x00");
    auto f = doc(fetches + "e.");
    ASSERT_EQ(f->root().asList()->size(), 1'000'001u);
    EXPECT_EQ(f->root().asList()->back().asString()->data(),
              f->root().asList()->front().asString()->data());
}

}  // namespace
