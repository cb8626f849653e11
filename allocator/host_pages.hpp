// The pages behind pinned host blocks: each block is an anonymous private
// mapping of its own, so that NUMA placement, locking and release are per
// block, and munmap hands the memory straight back to the OS (emptyCache).
#pragma once

#include <cstddef>

namespace mtia::allocator {

// The OS page size. Thread-safe, non-blocking, never throws.
size_t hostPageSize() noexcept;

// Maps size bytes (a multiple of the page size) of zeroed read-write memory with no page present
// yet, or returns nullptr (errno says why). Thread-safe; may block in the OS; never throws.
void* mapHostPages(size_t size) noexcept;

// Returns a mapping from mapHostPages (and any lock on it) to the OS. Thread-safe; never throws.
void unmapHostPages(void* addr, size_t size) noexcept;

// Faults every page of the range in, so that placement is decided now and the first use of the
// memory pays no page faults. Thread-safe; blocks while the OS provides the pages; never throws.
void touchHostPages(void* addr, size_t size) noexcept;

// Locks the range in memory (which faults its pages in). false when the kernel refuses
// (RLIMIT_MEMLOCK reached, no privilege): the range stays mapped, unlocked. Thread-safe; blocks
// while the OS provides the pages; never throws.
bool lockHostPages(void* addr, size_t size) noexcept;

// The soft RLIMIT_MEMLOCK limit in bytes, read now (a process may change it); SIZE_MAX when
// unlimited. Thread-safe, non-blocking, never throws.
size_t hostLockLimit() noexcept;

}  // namespace mtia::allocator
