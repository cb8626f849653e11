// Pool ids as PyTorch's MempoolId_t: {0,0} is a device's default pools,
// {n,0} a graph capture's own pool, {0,n} a shareable pool from
// mtiaGraphPoolHandle.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace mtia::allocator {

struct PoolId {
    uint64_t first = 0;
    uint64_t second = 0;
    bool isDefault() const { return first == 0 && second == 0; }
    bool operator==(const PoolId&) const = default;
};

struct PoolIdHash {
    size_t operator()(const PoolId& id) const noexcept {
        return std::hash<uint64_t>{}(id.first * 0x9e3779b97f4a7c15ULL ^ id.second);
    }
};

}  // namespace mtia::allocator
