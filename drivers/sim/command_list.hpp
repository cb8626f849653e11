// The object behind an mtiaDrvCommandList: commands validated and copied once
// (commandListCreate), then run as one command by any number of submissions,
// also on several queues at once. Immutable after creation, so runs read it
// without locks; reference counted (shared_ptr), so the handle table and each
// submitted run keep it alive independently.
#pragma once

#include "command.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

namespace mtia::sim {

class Device;

class CommandList {
public:
    // count default (empty) commands for device, to be filled by commandListCreate before the list
    // is shared. Throws std::bad_alloc.
    CommandList(Device& device, size_t count);
    // Releases what the commands hold: argument copies and modules (which may be dlclose()d here).
    ~CommandList();
    CommandList(const CommandList&) = delete;
    CommandList& operator=(const CommandList&) = delete;

    Device& device() const { return device_; }
    size_t size() const { return size_; }
    std::span<Command> commands() { return {commands_.get(), size_}; }
    std::span<const Command> commands() const { return {commands_.get(), size_}; }
    // Whether a kernel launch is among the commands (only those count for MTIA_SIM_FAULTS kernel
    // rules).
    bool hasKernels() const { return hasKernels_; }
    void setHasKernels() { hasKernels_ = true; }

private:
    Device& device_;
    const size_t size_;
    std::unique_ptr<Command[]> commands_;
    bool hasKernels_ = false;
};

}  // namespace mtia::sim
