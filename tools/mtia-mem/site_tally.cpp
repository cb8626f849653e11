#include "site_tally.hpp"

#include "byte_size.hpp"
#include "stack_labels.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace mtia::mem {

namespace {
constexpr size_t kMaxFramesInJson =
    32;  // enough to place a site; deep stacks are hundreds of frames
}

void SiteTally::add(StackId stack, uint64_t bytes, uint64_t blocks) {
    SiteTotal& t = bySite_[stack];
    t.stack = stack;
    t.bytes += bytes;
    t.blocks += blocks;
    bytes_ += bytes;
    blocks_ += blocks;
}

std::vector<SiteTotal> SiteTally::sorted() const {
    std::vector<SiteTotal> out;
    out.reserve(bySite_.size());
    for (const auto& [stack, total] : bySite_) out.push_back(total);
    std::sort(out.begin(), out.end(), [](const SiteTotal& a, const SiteTotal& b) {
        if (a.bytes != b.bytes) return a.bytes > b.bytes;
        if (a.blocks != b.blocks) return a.blocks > b.blocks;
        return a.stack < b.stack;
    });
    return out;
}

void printSites(const StackTable& stacks, const std::vector<SiteTotal>& sites, size_t top,
                const char* indent) {
    if (sites.empty()) {
        fmt::print("{}(none)\n", indent);
        return;
    }
    fmt::print("{}{:>12} {:>8}  {}\n", indent, "bytes", "blocks", "site");
    const size_t shown = std::min(top, sites.size());
    for (size_t i = 0; i < shown; ++i)
        fmt::print("{}{:>12} {:>8}  {}\n", indent, formatBytes(sites[i].bytes), sites[i].blocks,
                   siteLabel(stacks, sites[i].stack));
    if (shown < sites.size()) {
        uint64_t bytes = 0, blocks = 0;
        for (size_t i = shown; i < sites.size(); ++i) {
            bytes += sites[i].bytes;
            blocks += sites[i].blocks;
        }
        fmt::print("{}{:>12} {:>8}  ({} more sites)\n", indent, formatBytes(bytes), blocks,
                   sites.size() - shown);
    }
}

void writeSites(JsonWriter& json, const StackTable& stacks, const std::vector<SiteTotal>& sites,
                size_t top) {
    json.beginArray();
    for (size_t i = 0; i < std::min(top, sites.size()); ++i) {
        json.beginObject()
            .member("site", siteLabel(stacks, sites[i].stack))
            .key("frames")
            .beginArray();
        for (const std::string& f : stackLabels(stacks, sites[i].stack, kMaxFramesInJson))
            json.value(f);
        json.endArray()
            .member("blocks", sites[i].blocks)
            .member("bytes", sites[i].bytes)
            .endObject();
    }
    json.endArray();
}

}  // namespace mtia::mem
