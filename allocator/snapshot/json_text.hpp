// JSON string literals, for the snapshot writer and for mtia-mem's --json
// reports: one escaping rule for every JSON this project writes. Text is
// UTF-8 (the readers check it), so only quotes, backslashes and control
// characters need escapes.
#pragma once

#include <string_view>

namespace mtia::mem {

// Appends s as a quoted JSON string to out (anything with push_back(char): std::string,
// fmt::memory_buffer).
template <class Out>
void appendJsonString(Out& out, std::string_view s) {
    static constexpr char kHex[] = "0123456789abcdef";
    out.push_back('"');
    for (char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out.push_back('\\');
            out.push_back(c);
        } else if (u < 0x20) {
            for (char e : {'\\', 'u', '0', '0'}) out.push_back(e);
            out.push_back(kHex[u >> 4]);
            out.push_back(kHex[u & 0xf]);
        } else {
            out.push_back(c);
        }
    }
    out.push_back('"');
}

}  // namespace mtia::mem
