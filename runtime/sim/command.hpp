// A submitted command as the engines see it: the caller's command plus what
// submit had to take with it (argument values, references that keep a module
// or a wait target alive until the command completed).
#pragma once

#include "kernels.hpp"

#include <mtia/mtia_driver.h>

#include <cstddef>
#include <cstdint>
#include <memory>

namespace mtia::sim {

class Queue;

// Copies of a launch's argument values. Small launches (all built-ins) stay inline, so submitting
// them allocates nothing.
class ArgumentCopy {
 public:
  ArgumentCopy() = default;
  ArgumentCopy(ArgumentCopy&& other) noexcept;
  ArgumentCopy& operator=(ArgumentCopy&& other) noexcept;

  // Packs each args[i] (sizes from kernel) at the kernel's offsets.
  void assign(const Kernel& kernel, void* const* args);
  // Pointers to each copied argument, as the kernel receives them.
  void pointers(const Kernel& kernel, void** out);
  // Frees what a large launch allocated.
  void clear() noexcept {
    if (heap_) heap_.reset();
  }

 private:
  static constexpr size_t kInlineBytes = 64;
  unsigned char* data() { return heap_ ? heap_.get() : inline_; }

  alignas(16) unsigned char inline_[kInlineBytes];
  std::unique_ptr<unsigned char[]> heap_;
  uint32_t bytes_ = 0;
};

struct Command {
  uint64_t seq = 0;
  mtiaDrvCommand cmd{};  // u.kernel.args is not used after submit: see args
  const Kernel* kernel = nullptr;
  bool injectFault = false;        // MTIA_SIM_FAULTS picked this launch
  std::shared_ptr<Module> module;  // keeps a module kernel's code loaded until the command completed
  std::shared_ptr<Queue> waitTarget;
  ArgumentCopy args;

  // Drops what keeps other objects alive or owns memory; the rest is overwritten by the next use. Writes
  // only what holds something, so the engine leaves the slots of plain launches unmodified in its cache
  // and the submitter reusing them does not have to fetch them back.
  void release() noexcept {
    if (module) module.reset();
    if (waitTarget) waitTarget.reset();
    args.clear();
  }
};

}  // namespace mtia::sim
