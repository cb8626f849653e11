// Just enough JSON for mtia-smi's documents: one compact line per document,
// so a loop prints JSON Lines with nothing more to do.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mtia::smi {

std::string jsonString(std::string_view text);

// Builds one object or array; the caller adds members in order.
class JsonBuilder {
public:
    JsonBuilder& beginObject(std::string_view key = {});
    JsonBuilder& endObject();
    JsonBuilder& beginArray(std::string_view key = {});
    JsonBuilder& endArray();
    JsonBuilder& string(std::string_view key, std::string_view value);
    JsonBuilder& number(std::string_view key, uint64_t value);
    JsonBuilder& signedNumber(std::string_view key, int64_t value);
    JsonBuilder& null(std::string_view key);
    JsonBuilder& raw(std::string_view key,
                     std::string_view json);  // value already JSON (number, null, string)
    const std::string& text() const { return out_; }

private:
    void key(std::string_view name);
    std::string out_;
    bool first_ = true;
};

}  // namespace mtia::smi
