// Bytes and blocks grouped by allocation stack: what summary (live blocks),
// diff (new blocks), trace (live at the peak) and plot (the series of the
// timeline, the sites table) all report, and how they print it.
#pragma once

#include "allocator/snapshot/model.hpp"
#include "json_writer.hpp"

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace mtia::mem {

struct SiteTotal {
    StackId stack = 0;
    uint64_t blocks = 0;
    uint64_t bytes = 0;
};

class SiteTally {
public:
    void add(StackId stack, uint64_t bytes, uint64_t blocks = 1);
    // Largest first: bytes, then blocks, then the stack's id (the order of first appearance in the
    // file), so that equal inputs print equal reports.
    std::vector<SiteTotal> sorted() const;
    uint64_t bytes() const { return bytes_; }
    uint64_t blocks() const { return blocks_; }
    bool empty() const { return bySite_.empty(); }

private:
    std::unordered_map<StackId, SiteTotal> bySite_;
    uint64_t bytes_ = 0;
    uint64_t blocks_ = 0;
};

// The first `top` sites as a table ("bytes  blocks  site"), and a line for the rest.
void printSites(const StackTable& stacks, const std::vector<SiteTotal>& sites, size_t top,
                const char* indent);
// [{"site": "forward (model.py:42)", "frames": [...], "blocks": n, "bytes": n}, ...], the first
// `top`.
void writeSites(JsonWriter& json, const StackTable& stacks, const std::vector<SiteTotal>& sites,
                size_t top);

}  // namespace mtia::mem
