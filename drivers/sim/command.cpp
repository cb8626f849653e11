#include "command.hpp"

#include <cstring>
#include <utility>

namespace mtia::sim {

const unsigned char* ArgumentCopy::data(const Kernel& kernel) const {
    if (!onHeap(kernel)) return bytes_;
    const unsigned char* heap = nullptr;
    std::memcpy(&heap, bytes_, sizeof(heap));
    return heap;
}

void ArgumentCopy::assign(const Kernel& kernel, void* const* args) {
    unsigned char* base = bytes_;
    if (onHeap(kernel)) {
        base = new unsigned char[kernel.argBytes];
        std::memcpy(bytes_, &base, sizeof(base));
    }
    for (uint32_t i = 0; i < kernel.numArgs; ++i)
        std::memcpy(base + kernel.offsets[i], args[i], kernel.sizes[i]);
}

void ArgumentCopy::copyTo(const Kernel& kernel, unsigned char* out, void** argv) const {
    std::memcpy(out, data(kernel), kernel.argBytes);
    for (uint32_t i = 0; i < kernel.numArgs; ++i) argv[i] = out + kernel.offsets[i];
}

void ArgumentCopy::release(const Kernel& kernel) noexcept {
    if (onHeap(kernel)) delete[] data(kernel);
}

void Command::takeFrom(Command& other) noexcept {
    cmd = other.cmd;
    const uint32_t f = other.flags();
    if ((f & kCommandHolds) != 0) holds = std::move(other.holds);
    if ((f & kCommandArgs) != 0) {
        args = other.args;
    } else if ((f & kCommandInjectFault) != 0 && cmd.type == mtiaDrvCmdList) {
        faultAt = other.faultAt;
    }
    other.cmd.reserved &= ~(kCommandHolds | kCommandArgs);
}

void Command::release() noexcept {
    const uint32_t f = flags();
    // Arguments first: a module kernel's description (kernel()) goes with its module.
    if ((f & kCommandArgs) != 0) args.release(kernel());
    if ((f & kCommandHolds) != 0) holds.reset();
}

}  // namespace mtia::sim
