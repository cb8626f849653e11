// Shared pieces of the memory-history conformance tests: a fixture that
// starts every test with recording off and an empty cache, and snapshots
// taken through the public ABI and parsed with simdjson, with finders for
// trace entries and blocks. Uses only the public header (and the allocator
// tests' fixture and EXPECT_FAILS, with the shared helpers of tests/common).
#pragma once

#include "../allocator/alloc_test_util.hpp"

#include <simdjson.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace history_test {

using namespace alloc_test;
using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

// A snapshot taken as JSON and parsed; the document lives as long as this.
class JsonSnapshot {
public:
    explicit JsonSnapshot(unsigned flags = mtiaSnapshotIncludeTraces) {
        mtiaBuffer buf{};
        const mtiaError_t st = mtiaMemorySnapshot(mtiaSnapshotJson, flags, &buf);
        if (st != mtiaSuccess) {
            ADD_FAILURE() << "mtiaMemorySnapshot: " << mtiaGetErrorName(st) << ": "
                          << mtiaGetLastErrorMessage();
            text_ = "{}";
        } else {
            text_.assign(static_cast<const char*>(buf.data), buf.size);
            mtiaBufferFree(&buf);
        }
        if (parser_.parse(text_).get(root_) != simdjson::SUCCESS)
            ADD_FAILURE() << "snapshot is not JSON: " << text_;
    }
    element root() const { return root_; }
    const std::string& text() const { return text_; }
    array segments() const { return root_["segments"].get_array().value(); }
    array trace(int dev = 0) const {
        return root_["device_traces"].at(static_cast<size_t>(dev)).get_array().value();
    }
    // The trace entries of dev with this action, oldest first.
    std::vector<element> entries(std::string_view action, int dev = 0) const {
        std::vector<element> out;
        for (element e : trace(dev))
            if (e["action"].get_string().value() == action) out.push_back(e);
        return out;
    }
    // The block at address, as {segment, block} (null elements when absent).
    std::pair<element, element> block(const void* address) const {
        const auto a = reinterpret_cast<uint64_t>(address);
        for (element s : segments())
            for (element b : s["blocks"].get_array())
                if (b["address"].get_uint64().value() == a) return {s, b};
        return {};
    }

private:
    std::string text_;
    simdjson::dom::parser parser_;
    element root_;
};

inline uint64_t u64(element e, const char* key) {
    return e[key].get_uint64().value();
}
inline int64_t i64(element e, const char* key) {
    return e[key].get_int64().value();
}
inline std::string_view str(element e, const char* key) {
    return e[key].get_string().value();
}
inline uint64_t addr(const void* p) {
    return reinterpret_cast<uint64_t>(p);
}
// The "name" of every frame of e (a block, segment or trace entry), innermost first.
inline std::vector<std::string> frameNames(element e) {
    std::vector<std::string> out;
    for (element f : e["frames"].get_array()) out.emplace_back(f["name"].get_string().value());
    return out;
}

// Every test starts with recording off (which forgets what earlier tests recorded) and an empty
// cache, and leaves recording off.
class HistoryTest : public AllocTest {
protected:
    void SetUp() override {
        AllocTest::SetUp();
        ASSERT_OK(mtiaMemoryRecordHistory(mtiaHistoryOff, mtiaStacksNone, 0));
    }
    void TearDown() override {
        EXPECT_OK(mtiaMemoryRecordHistory(mtiaHistoryOff, mtiaStacksNone, 0));
        EXPECT_OK(mtiaMemorySetContextProvider(nullptr));
        AllocTest::TearDown();
    }
};

}  // namespace history_test
