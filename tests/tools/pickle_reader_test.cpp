// The pickle reader of mtia-mem: every opcode a memory snapshot uses, and malformed input rejected with
// the offset and what is wrong. Pickles are written by hand here (byte strings); the end-to-end test
// also reads pickles that python3 wrote.
#include "pickle_reader.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

using namespace mtia::mem::pickle;

Value parseBytes(const std::string& s) { return parse(reinterpret_cast<const uint8_t*>(s.data()), s.size()); }

std::string errorOf(const std::string& s) {
  try {
    parseBytes(s);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

const std::string kProto4 = std::string("\x80\x04", 2);

// A byte string literal, embedded NULs included.
template <size_t N>
std::string B(const char (&s)[N]) {
  return std::string(s, N - 1);
}

TEST(PickleReader, ScalarsOfEveryKind) {
  EXPECT_TRUE(parseBytes(kProto4 + "N.").isNone());
  EXPECT_EQ(std::get<bool>(parseBytes(kProto4 + "\x88.").v), true);
  EXPECT_EQ(std::get<bool>(parseBytes(kProto4 + "\x89.").v), false);
  EXPECT_EQ(*parseBytes(kProto4 + "K\xff.").asInt(), 255);
  EXPECT_EQ(*parseBytes(kProto4 + std::string("M\x34\x12.", 4)).asInt(), 0x1234);
  EXPECT_EQ(*parseBytes(kProto4 + std::string("J\xfe\xff\xff\xff.", 6)).asInt(), -2);
  // LONG1: 5 bytes, little-endian two's complement, positive and negative.
  EXPECT_EQ(*parseBytes(kProto4 + std::string("\x8a\x05\x00\x00\x00\x00\x01.", 8)).asInt(), int64_t{1} << 32);
  EXPECT_EQ(*parseBytes(kProto4 + std::string("\x8a\x02\xff\xff.", 5)).asInt(), -1);
  EXPECT_EQ(*parseBytes(kProto4 + std::string("\x8a\x00.", 3)).asInt(), 0);
  EXPECT_EQ(*parseBytes(kProto4 + std::string("\x8a\x08\xff\xff\xff\xff\xff\xff\xff\x7f.", 11)).asInt(), INT64_MAX);
  // BINFLOAT is big-endian: 1.5 = 0x3ff8000000000000.
  EXPECT_EQ(*parseBytes(kProto4 + std::string("G\x3f\xf8\x00\x00\x00\x00\x00\x00.", 10)).asFloat(), 1.5);
  EXPECT_EQ(*parseBytes(kProto4 + "\x8c\x05hello.").asString(), "hello");
  EXPECT_EQ(*parseBytes(kProto4 + std::string("X\x02\x00\x00\x00hi.", 9)).asString(), "hi");
  EXPECT_EQ(*parseBytes(kProto4 + std::string("\x8d\x01\x00\x00\x00\x00\x00\x00\x00x.", 12)).asString(), "x");
  EXPECT_EQ(std::get<Bytes>(parseBytes(kProto4 + "C\x02" "ab.").v).data, "ab");
  EXPECT_EQ(std::get<Bytes>(parseBytes(kProto4 + std::string("B\x01\x00\x00\x00z.", 8)).v).data, "z");
}

TEST(PickleReader, ContainersMemoAndFrames) {
  // {"a": [1, 2, (3,)], "b": <the same list>} with FRAME, MEMOIZE, MARK/APPENDS, SETITEMS, TUPLE1, BINGET.
  const std::string p = kProto4 + std::string("\x95\x00\x00\x00\x00\x00\x00\x00\x00", 9) + "}\x94(" +
                        "\x8c\x01" "a\x94]\x94(K\x01K\x02K\x03\x85\x94" "e" + "\x8c\x01" "bh\x02u.";
  const Value v = parseBytes(p);
  const Value* a = v.get("a");
  const Value* b = v.get("b");
  ASSERT_TRUE(a && b && a->asList() && b->asList());
  ASSERT_EQ(a->asList()->size(), 3u);
  EXPECT_EQ(*(*a->asList())[1].asInt(), 2);
  ASSERT_NE((*a->asList())[2].asList(), nullptr);
  EXPECT_EQ(*(*(*a->asList())[2].asList())[0].asInt(), 3);
  EXPECT_EQ(a->asList(), b->asList()) << "BINGET must hand out the same list";
  // APPEND, SETITEM, EMPTY_TUPLE, TUPLE, TUPLE2, TUPLE3, BINPUT/LONG_BINPUT/LONG_BINGET.
  const std::string q = kProto4 + B("]q\x00K\x07" "a)(K\x01K\x02t\x86") + "K\x01K\x02K\x03\x87" +
                        std::string("r\x05\x00\x00\x00j\x05\x00\x00\x00", 10) + B("\x86\x86\x86h\x00\x86.");
  const Value w = parseBytes(q);
  ASSERT_NE(w.asList(), nullptr);
  const std::string r = kProto4 + "}\x8c\x01kK\x09s.";
  EXPECT_EQ(*parseBytes(r).get("k")->asInt(), 9);
  EXPECT_EQ(parseBytes(r).get("missing"), nullptr);
  EXPECT_TRUE(parseBytes(kProto4 + ").").asList()->empty());
}

TEST(PickleReader, RejectsMalformedInput) {
  EXPECT_NE(errorOf("N.").find("not a pickle of protocol 2"), std::string::npos);
  EXPECT_NE(errorOf(std::string("\x80\x01N.", 4)).find("pickle protocol 1"), std::string::npos);
  EXPECT_NE(errorOf(kProto4 + "N").find("ends without STOP"), std::string::npos);
  EXPECT_NE(errorOf(kProto4 + "NN.").find("STOP with 2 values"), std::string::npos);
  EXPECT_NE(errorOf(kProto4 + ".").find("STOP with 0 values"), std::string::npos);
  // A function call (GLOBAL + REDUCE) is code, never data: refused at its offset.
  EXPECT_NE(errorOf(kProto4 + "cos\nsystem\n.").find("offset 2: opcode 0x63"), std::string::npos);
  EXPECT_NE(errorOf(kProto4 + "R.").find("opcode 0x52"), std::string::npos);
  // Lengths past the end of the input.
  EXPECT_NE(errorOf(kProto4 + "\x8c\x09short.").find("needs 9 more bytes"), std::string::npos);
  EXPECT_NE(errorOf(kProto4 + std::string("X\xff\xff\xff\x7f", 5)).find("more bytes"), std::string::npos);
  EXPECT_NE(errorOf(kProto4 + "J\x01").find("needs 4 more bytes"), std::string::npos);
  EXPECT_NE(errorOf(kProto4 + std::string("\x8a\x09\x01\x02\x03\x04\x05\x06\x07\x08\x09.", 13))
                .find("integer of 9 bytes"),
            std::string::npos);
  // Stack and memo misuse.
  EXPECT_NE(errorOf(kProto4 + "a.").find("stack underflow"), std::string::npos);
  EXPECT_NE(errorOf(kProto4 + "Na.").find("stack underflow"), std::string::npos);
  EXPECT_NE(errorOf(kProto4 + "K\x01K\x02" "a.").find("not a list"), std::string::npos);
  EXPECT_NE(errorOf(kProto4 + "]K\x01K\x02s.").find("not a dict"), std::string::npos);
  EXPECT_NE(errorOf(kProto4 + "}(K\x01u.").find("odd number"), std::string::npos);
  EXPECT_NE(errorOf(kProto4 + "e.").find("no MARK"), std::string::npos);
  EXPECT_NE(errorOf(kProto4 + "h\x03.").find("memo index 3 was never set"), std::string::npos);
  EXPECT_NE(errorOf(kProto4 + "(K\x01.").find("STOP with"), std::string::npos);
  EXPECT_NE(errorOf(kProto4 + "(\x85.").find("stack underflow"), std::string::npos);
  EXPECT_NE(errorOf(kProto4 + "N" + std::string("r\xff\xff\xff\xff", 5) + ".").find("too large"), std::string::npos);
}

TEST(PickleReader, DeepNestingIsBounded) {
  // 200000 MARKs: refused, not a crash.
  EXPECT_NE(errorOf(kProto4 + std::string(200000, '(') + ".").find("nested MARKs"), std::string::npos);
}

}  // namespace
