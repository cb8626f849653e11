// C++ call stacks as return addresses, captured cheaply (the unwinder walks
// the .eh_frame tables; no names, no allocation), to be named later by the
// symbolizer (symbolizer.hpp) when someone asks. The memory history takes one
// per allocation while recording with C++ stacks.
#pragma once

#include <cstddef>

namespace mtia {

// The return address of the C API function the calling thread is in (the address in its caller's
// code), set by the API functions that allocate so that captured stacks start at the caller: the
// runtime's own frames above it say nothing to a user. Null outside such a call.
inline thread_local const void* tlApiReturnAddress = nullptr;

// Writes up to max return addresses of the calling thread's stack into out, innermost first, leaving
// out the innermost `skip` frames (captureNativeStack's own frame is never included). Returns how many
// were written. Thread-safe, non-blocking, async-signal-unsafe (the unwinder may allocate on its
// first use in a thread).
size_t captureNativeStack(void** out, size_t max, size_t skip) noexcept;

// As captureNativeStack, but starting at the frame whose return address is from (the frames inside
// the call are left out); all frames when no frame matches (from null, or inlined away).
size_t captureNativeStackFrom(void** out, size_t max, const void* from) noexcept;

}  // namespace mtia
