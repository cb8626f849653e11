// C++ call stacks as return addresses, captured cheaply (no names, no allocation after a thread's
// first capture), to be named later by the symbolizer (symbolizer.hpp) when someone asks. The
// memory history takes one per allocation while recording with C++ stacks.
//
// How (x86-64 Linux): a caching frame-walker. Each thread keeps a table (4096 entries, 64 KiB,
// allocated on its first capture, freed at its exit) from code address to the unwind rule the
// .eh_frame CFI gives there, reduced to "CFA = RSP or RBP + k, return address and saved RBP at
// fixed offsets from the CFA" (cfi_rules.hpp); a miss finds the FDE with libgcc's _Unwind_Find_FDE
// and runs its CFI program. A warm capture then costs a few nanoseconds a frame instead of libgcc's
// full CFI interpretation of every frame. The walk starts from the capture function's own RSP, RBP
// and an address inside it, reads only the calling thread's stack (bounds from pthread_getattr_np)
// and requires each CFA to be above the last. Whatever it cannot vouch for (CFI with DWARF
// expressions as in signal trampolines and realigned stacks, registers saved in registers, an
// address with no FDE, a thread on another stack, a CFA or saved slot outside the stack) makes that
// capture walk again with libgcc's _Unwind_Backtrace, which gives the same frames, slowly. Stale
// rules: every capture compares the dynamic loader's load/unload counters (dl_phdr_info's dlpi_adds
// and dlpi_subs, one dl_iterate_phdr callback) with those the table was filled under and empties
// the table when they changed, so code unloaded by dlclose and other code loaded at its addresses
// are never confused.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mtia {

// The return address of the C API function the calling thread is in (the address in its caller's
// code), set by the API functions that allocate so that captured stacks start at the caller: the
// runtime's own frames above it say nothing to a user. Null outside such a call.
inline thread_local const void* tlApiReturnAddress = nullptr;

// Writes up to max return addresses of the calling thread's stack into out, innermost first,
// leaving out the innermost `skip` frames (captureNativeStack's own frame is never included).
// Returns how many were written. Thread-safe, non-blocking, async-signal-unsafe (the unwinder may
// allocate on its first use in a thread).
size_t captureNativeStack(void** out, size_t max, size_t skip) noexcept;

// As captureNativeStack, but starting at the frame whose return address is from (the frames inside
// the call are left out); all frames when no frame matches (from null, or inlined away).
size_t captureNativeStackFrom(void** out, size_t max, const void* from) noexcept;

// The calling thread's counts, for tests and diagnostics: captures the cached walker answered,
// those it handed to _Unwind_Backtrace, and rule-cache misses.
struct NativeStackStats {
    uint64_t fast = 0;
    uint64_t fallbacks = 0;
    uint64_t misses = 0;
};
NativeStackStats nativeStackStats() noexcept;

}  // namespace mtia
