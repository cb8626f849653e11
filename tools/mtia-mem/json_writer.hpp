// The --json reports: one JSON document built in memory (reports are small)
// with commas and nesting kept track of, strings escaped as the snapshot
// writer escapes them.
#pragma once

#include "allocator/snapshot/json_text.hpp"

#include <fmt/format.h>

#include <cmath>
#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace mtia::mem {

class JsonWriter {
public:
    JsonWriter& beginObject() { return open('{'); }
    JsonWriter& endObject() { return close('}'); }
    JsonWriter& beginArray() { return open('['); }
    JsonWriter& endArray() { return close(']'); }
    // The next value is this member's.
    JsonWriter& key(std::string_view k) {
        separate();
        appendJsonString(text_, k);
        text_ += ": ";
        afterKey_ = true;
        return *this;
    }
    JsonWriter& value(std::string_view s) {
        separate();
        appendJsonString(text_, s);
        return *this;
    }
    JsonWriter& value(const char* s) { return value(std::string_view(s)); }
    JsonWriter& value(const std::string& s) { return value(std::string_view(s)); }
    JsonWriter& value(bool b) { return raw(b ? "true" : "false"); }
    template <std::integral T>
    requires(!std::is_same_v<T, bool>) JsonWriter& value(T v) { return raw(fmt::format("{}", v)); }
    JsonWriter& value(double v) { return std::isfinite(v) ? raw(fmt::format("{}", v)) : null(); }
    JsonWriter& null() { return raw("null"); }
    template <class T>
    JsonWriter& member(std::string_view k, const T& v) {
        key(k);
        return value(v);
    }

    // The document, with a final newline.
    std::string finish() const { return text_ + "\n"; }

private:
    void separate() {
        if (afterKey_) {
            afterKey_ = false;
            return;
        }
        if (!first_.empty()) {
            if (!first_.back()) text_ += ", ";
            first_.back() = false;
        }
    }
    JsonWriter& raw(std::string_view s) {
        separate();
        text_ += s;
        return *this;
    }
    JsonWriter& open(char c) {
        separate();
        text_ += c;
        first_.push_back(true);
        return *this;
    }
    JsonWriter& close(char c) {
        text_ += c;
        first_.pop_back();
        return *this;
    }

    std::string text_;
    std::vector<bool> first_;  // per open container: nothing written in it yet
    bool afterKey_ = false;
};

}  // namespace mtia::mem
