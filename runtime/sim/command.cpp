#include "command.hpp"

#include <cstring>
#include <utility>

namespace mtia::sim {

unsigned char* ArgumentCopy::data(const Kernel& kernel) {
  if (!onHeap(kernel)) return bytes_;
  unsigned char* heap = nullptr;
  std::memcpy(&heap, bytes_, sizeof(heap));
  return heap;
}

void ArgumentCopy::assign(const Kernel& kernel, void* const* args) {
  if (onHeap(kernel)) {
    unsigned char* heap = new unsigned char[kernel.argBytes];
    std::memcpy(bytes_, &heap, sizeof(heap));
  }
  unsigned char* base = data(kernel);
  for (uint32_t i = 0; i < kernel.numArgs; ++i) std::memcpy(base + kernel.offsets[i], args[i], kernel.sizes[i]);
}

void ArgumentCopy::pointers(const Kernel& kernel, void** out) {
  unsigned char* base = data(kernel);
  for (uint32_t i = 0; i < kernel.numArgs; ++i) out[i] = base + kernel.offsets[i];
}

void ArgumentCopy::release(const Kernel& kernel) noexcept {
  if (onHeap(kernel)) delete[] data(kernel);
}

void Command::takeFrom(Command& other) noexcept {
  cmd = other.cmd;
  if ((other.flags() & kCommandHolds) != 0) holds = std::move(other.holds);
  if ((other.flags() & kCommandArgs) != 0) args = other.args;
  other.cmd.reserved &= ~(kCommandHolds | kCommandArgs);
}

void Command::release() noexcept {
  const uint32_t f = flags();
  // Arguments first: a module kernel's description (kernel()) goes with its module.
  if ((f & kCommandArgs) != 0) args.release(kernel());
  if ((f & kCommandHolds) != 0) holds.reset();
}

}  // namespace mtia::sim
