// NUMA placement of pinned host blocks, over libnuma 2.0.16 and the
// mbind/get_mempolicy system calls. Three traps of that libnuma shape it
// (DESIGN.md's reference notes, section 5.2):
// - numa_alloc_onnode / numa_tonode_memory accept a node the host does not
//   have, print "mbind: Invalid argument" and leave the memory unplaced, so
//   a node is validated here first;
// - numa_available() says "available" where seccomp refuses get_mempolicy
//   and mbind (containers without CAP_SYS_NICE), so the calls are probed;
// - libnuma prints through its weak numa_warn / numa_error. Defining them in
//   libmtia.so would not help: the version script keeps every non-mtia
//   symbol local, so libnuma never binds to them. Instead only functions that
//   cannot print are used here: numa_available, numa_max_node, the bitmask
//   reads, and the plain system-call wrappers mbind and get_mempolicy.
// Nothing here ever writes to stderr; a host without NUMA simply gets no
// placement.
#pragma once

#include <cstddef>

namespace mtia::allocator {

// Whether pages can be placed on NUMA nodes at all: libnuma reports NUMA and
// get_mempolicy works for this process. Probed once. Thread-safe, non-blocking, never throws.
bool hostNumaUsable() noexcept;

// node when it is a memory node of this host that this process may place memory on, else -1 (also
// for -1, "no preference", and whenever hostNumaUsable() is false). Thread-safe, non-blocking,
// never throws, never prints.
int usableHostNode(int node) noexcept;

// Makes the not yet touched pages of [addr, addr + size) prefer node when they are faulted in:
// pages go there while it has free memory, elsewhere after that (MPOL_PREFERRED: a bound policy
// would have the kernel kill the process instead of falling back when the node runs out). addr is
// page-aligned. node must come from usableHostNode. Returns false, changing nothing, when the
// kernel refuses. Thread-safe, non-blocking, never throws, never prints.
bool preferHostNode(void* addr, size_t size, int node) noexcept;

// The NUMA node holding the page at addr, or -1 (NUMA not usable, or the kernel refuses). A page
// not present yet is faulted in by the query (the kernel reads it), so ask only about memory the
// caller owns. Used by tests and diagnostics. Thread-safe, non-blocking, never throws, never
// prints.
int hostNodeOfPage(const void* addr) noexcept;

}  // namespace mtia::allocator
