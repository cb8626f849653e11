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

void CommandRing::grow() {
  // Unroll the ring into a larger vector, oldest first.
  std::vector<Command> larger(slots_.empty() ? 16 : slots_.size() * 2);
  for (size_t i = 0; i < size_; ++i) larger[i] = std::move(slots_[(head_ + i) % slots_.size()]);
  slots_ = std::move(larger);
  head_ = 0;
}

void CommandRing::push(Command&& command) {
  if (size_ == slots_.size()) grow();
  slots_[(head_ + size_) % slots_.size()] = std::move(command);
  ++size_;
}

void CommandRing::pushFront(Command&& command) {
  if (size_ == slots_.size()) grow();
  head_ = (head_ + slots_.size() - 1) % slots_.size();
  slots_[head_] = std::move(command);
  ++size_;
}

void CommandRing::pop(Command& out) {
  out = std::move(slots_[head_]);
  head_ = (head_ + 1) % slots_.size();
  --size_;
}

}  // namespace mtia::sim
