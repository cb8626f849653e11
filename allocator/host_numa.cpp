#include "allocator/host_numa.hpp"

#include <numa.h>
#include <numaif.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <vector>

namespace mtia::allocator {

bool hostNumaUsable() noexcept {
    static const bool usable = [] {
        // numa_available() only asks whether the kernel knows get_mempolicy (ENOSYS); seccomp's
        // EPERM passes that test in libnuma 2.0.16, so the call is made here as well, and any
        // failure means "no NUMA" rather than placement calls that fail later.
        if (numa_available() < 0) return false;
        int mode = 0;
        return syscall(SYS_get_mempolicy, &mode, nullptr, 0UL, nullptr, 0UL) == 0;
    }();
    return usable;
}

int usableHostNode(int node) noexcept {
    if (node < 0 || !hostNumaUsable()) return -1;
    // A device may report a node of another machine (an injected topology, a misconfigured driver):
    // libnuma would take it, print, and place nothing, so only nodes of this host that the
    // process's cpuset allows are accepted.
    if (node > numa_max_node()) return -1;
    if (numa_all_nodes_ptr == nullptr ||
        numa_bitmask_isbitset(numa_all_nodes_ptr, static_cast<unsigned>(node)) == 0)
        return -1;
    return node;
}

bool preferHostNode(void* addr, size_t size, int node) noexcept {
    if (node < 0 || !hostNumaUsable()) return false;
    constexpr unsigned kBits = sizeof(unsigned long) * CHAR_BIT;
    try {
        std::vector<unsigned long> mask(static_cast<size_t>(node) / kBits + 1, 0UL);
        mask[static_cast<size_t>(node) / kBits] = 1UL << (static_cast<unsigned>(node) % kBits);
        // The kernel reads maxnode - 1 bits, hence the + 1 (as libnuma itself passes it).
        const unsigned long maxnode = mask.size() * kBits + 1;
        return mbind(addr, size, MPOL_PREFERRED, mask.data(), maxnode, 0) == 0;
    } catch (...) {  // the mask could not be allocated: no placement, as on a host without NUMA
        return false;
    }
}

int hostNodeOfPage(const void* addr) noexcept {
    if (!hostNumaUsable()) return -1;
    int node = -1;
    if (get_mempolicy(&node, nullptr, 0, const_cast<void*>(addr), MPOL_F_NODE | MPOL_F_ADDR) != 0)
        return -1;
    return node;
}

}  // namespace mtia::allocator
