#include "runtime/core/native_stack.hpp"

#include <unwind.h>

#include <cstdint>

namespace mtia {

namespace {

struct Walk {
  void** out;
  size_t max;
  size_t skip;
  size_t count;
  uintptr_t from;  // 0: no start frame; else frames before the one with this address are dropped
  size_t dropped;  // frames dropped while looking for from
};

_Unwind_Reason_Code step(_Unwind_Context* ctx, void* arg) {
  auto* w = static_cast<Walk*>(arg);
  const _Unwind_Ptr ip = _Unwind_GetIP(ctx);
  if (ip == 0) return _URC_END_OF_STACK;
  if (w->skip > 0) {
    --w->skip;
    return _URC_NO_REASON;
  }
  if (w->from != 0) {
    if (ip != w->from) {
      w->out[w->dropped++ % w->max] = reinterpret_cast<void*>(ip - 1);
      return _URC_NO_REASON;
    }
    w->from = 0;
    w->dropped = 0;
  }
  if (w->count == w->max) return _URC_END_OF_STACK;
  // A return address points after the call: one byte back lies inside the calling instruction, which
  // names the right function (and line) even when the call is the last instruction of a function.
  w->out[w->count++] = reinterpret_cast<void*>(ip - 1);
  return _URC_NO_REASON;
}

}  // namespace

size_t captureNativeStack(void** out, size_t max, size_t skip) noexcept {
  if (out == nullptr || max == 0) return 0;
  Walk w{out, max, skip + 1, 0, 0, 0};  // + 1: this function's own frame
  _Unwind_Backtrace(step, &w);
  return w.count;
}

size_t captureNativeStackFrom(void** out, size_t max, const void* from) noexcept {
  if (out == nullptr || max == 0) return 0;
  Walk w{out, max, 1, 0, reinterpret_cast<uintptr_t>(from), 0};
  _Unwind_Backtrace(step, &w);
  if (w.from != 0) {
    // No frame matched: the walk kept the frames it passed, the first max of them in order unless
    // more went round the buffer, in which case the walk is taken again from the top.
    if (w.dropped <= max) return w.dropped;
    return captureNativeStack(out, max, 1);
  }
  return w.count;
}

}  // namespace mtia
