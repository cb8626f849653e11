#include "json_text.hpp"

#include <cstdio>

namespace mtia::smi {

std::string jsonString(std::string_view text) {
    std::string out = "\"";
    for (unsigned char c : text) {
        switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\t': out += "\\t"; break;
        default:
            if (c < 0x20) {
                char buf[8];
                std::snprintf(buf, sizeof buf, "\\u%04x", c);
                out += buf;
            } else {
                out += static_cast<char>(c);
            }
        }
    }
    return out + "\"";
}

void JsonBuilder::key(std::string_view name) {
    if (!first_) out_ += ',';
    first_ = false;
    if (!name.empty()) out_ += jsonString(name) + ":";
}

JsonBuilder& JsonBuilder::beginObject(std::string_view name) {
    key(name);
    out_ += '{';
    first_ = true;
    return *this;
}

JsonBuilder& JsonBuilder::endObject() {
    out_ += '}';
    first_ = false;
    return *this;
}

JsonBuilder& JsonBuilder::beginArray(std::string_view name) {
    key(name);
    out_ += '[';
    first_ = true;
    return *this;
}

JsonBuilder& JsonBuilder::endArray() {
    out_ += ']';
    first_ = false;
    return *this;
}

JsonBuilder& JsonBuilder::string(std::string_view name, std::string_view value) {
    return raw(name, jsonString(value));
}
JsonBuilder& JsonBuilder::number(std::string_view name, uint64_t value) {
    return raw(name, std::to_string(value));
}
JsonBuilder& JsonBuilder::signedNumber(std::string_view name, int64_t value) {
    return raw(name, std::to_string(value));
}
JsonBuilder& JsonBuilder::null(std::string_view name) {
    return raw(name, "null");
}

JsonBuilder& JsonBuilder::raw(std::string_view name, std::string_view json) {
    key(name);
    out_ += json;
    return *this;
}

}  // namespace mtia::smi
