#include "command.hpp"

#include <cstring>
#include <utility>

namespace mtia::sim {

ArgumentCopy::ArgumentCopy(ArgumentCopy&& other) noexcept { *this = std::move(other); }

ArgumentCopy& ArgumentCopy::operator=(ArgumentCopy&& other) noexcept {
  if (this == &other) return *this;
  heap_ = std::move(other.heap_);
  bytes_ = other.bytes_;
  if (!heap_ && bytes_ > 0) std::memcpy(inline_, other.inline_, bytes_);
  other.bytes_ = 0;
  return *this;
}

void ArgumentCopy::assign(const Kernel& kernel, void* const* args) {
  bytes_ = kernel.argBytes;
  if (bytes_ > kInlineBytes) {
    heap_.reset(new unsigned char[bytes_]);
  } else {
    heap_.reset();
  }
  unsigned char* base = data();
  for (uint32_t i = 0; i < kernel.numArgs; ++i) std::memcpy(base + kernel.offsets[i], args[i], kernel.sizes[i]);
}

void ArgumentCopy::pointers(const Kernel& kernel, void** out) {
  unsigned char* base = data();
  for (uint32_t i = 0; i < kernel.numArgs; ++i) out[i] = base + kernel.offsets[i];
}

}  // namespace mtia::sim
