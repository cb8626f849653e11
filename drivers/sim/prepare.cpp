#include "prepare.hpp"

#include "command_list.hpp"
#include "config.hpp"
#include "error.hpp"
#include "faults.hpp"
#include "handles.hpp"
#include "machine.hpp"

#include <fmt/format.h>

#include <cstring>

namespace mtia::sim {
namespace {

bool validDim(const mtiaDim3& d) {
    return d.x != 0 && d.y != 0 && d.z != 0;
}

bool rangeWraps(const void* p, uint64_t size) {
    return size > UINTPTR_MAX - reinterpret_cast<uintptr_t>(p);
}

mtiaError_t prepareKernel(Machine& machine, const CommandSite& site, const mtiaDrvCommand& cmd,
                          Command& command) {
    const auto& k = cmd.u.kernel;
    const auto* kernel = reinterpret_cast<const Kernel*>(k.kernel);
    if (!isBuiltinKernel(kernel)) {
        Handles& handles = machine.handles();
        auto it = handles.kernels.find(kernel);
        if (it == handles.kernels.end()) {
            return reportErrorf(mtiaErrorInvalidHandle, "{}: {} is not a kernel of a loaded module",
                                site.describe(), static_cast<const void*>(kernel));
        }
        command.holds = it->second;
        command.cmd.reserved |= kCommandHolds;
    }
    if (!validDim(k.grid) || !validDim(k.block)) {
        return reportErrorf(
            mtiaErrorInvalidValue,
            "{}: kernel '{}': grid ({}, {}, {}) and block ({}, {}, {}) must not be 0",
            site.describe(), kernel->name, k.grid.x, k.grid.y, k.grid.z, k.block.x, k.block.y,
            k.block.z);
    }
    if (k.grid.x > kMaxGridDim[0] || k.grid.y > kMaxGridDim[1] || k.grid.z > kMaxGridDim[2]) {
        return reportErrorf(mtiaErrorInvalidValue,
                            "{}: kernel '{}': grid ({}, {}, {}) exceeds ({}, {}, {})",
                            site.describe(), kernel->name, k.grid.x, k.grid.y, k.grid.z,
                            kMaxGridDim[0], kMaxGridDim[1], kMaxGridDim[2]);
    }
    const uint64_t threads = uint64_t{k.block.x} * k.block.y * k.block.z;
    if (k.block.x > kMaxBlockDim[0] || k.block.y > kMaxBlockDim[1] || k.block.z > kMaxBlockDim[2] ||
        threads > kMaxThreadsPerBlock) {
        return reportErrorf(
            mtiaErrorInvalidValue,
            "{}: kernel '{}': block ({}, {}, {}) exceeds ({}, {}, {}) or {} threads",
            site.describe(), kernel->name, k.block.x, k.block.y, k.block.z, kMaxBlockDim[0],
            kMaxBlockDim[1], kMaxBlockDim[2], kMaxThreadsPerBlock);
    }
    if (k.sharedMem > kSharedMemPerBlock) {
        return reportErrorf(mtiaErrorInvalidValue, "{}: kernel '{}': sharedMem {} exceeds {} bytes",
                            site.describe(), kernel->name, k.sharedMem, kSharedMemPerBlock);
    }
    if (kernel->numArgs > 0) {
        if (k.args == nullptr) {
            return reportErrorf(mtiaErrorInvalidValue,
                                "{}: kernel '{}' takes {} arguments but args is NULL",
                                site.describe(), kernel->name, kernel->numArgs);
        }
        for (uint32_t i = 0; i < kernel->numArgs; ++i) {
            if (k.args[i] == nullptr) {
                return reportErrorf(mtiaErrorInvalidValue, "{}: kernel '{}': args[{}] is NULL",
                                    site.describe(), kernel->name, i);
            }
        }
        command.args.assign(*kernel, k.args);
        command.cmd.reserved |= kCommandArgs;
    }
    return mtiaSuccess;
}

mtiaError_t prepareList(Machine& machine, Device& device, const CommandSite& site,
                        const mtiaDrvCommand& cmd, Command& command) {
    Handles& handles = machine.handles();
    auto it = handles.lists.find(reinterpret_cast<const CommandList*>(cmd.u.list.list));
    if (it == handles.lists.end()) {
        return reportErrorf(mtiaErrorInvalidHandle, "{}: {} is not a live command list",
                            site.describe(), static_cast<void*>(cmd.u.list.list));
    }
    const Device& owner = it->second->device();
    if (&owner != &device) {
        return reportErrorf(
            mtiaErrorInvalidValue,
            "{}: command list {} was made for device {}, not for this queue's device {}",
            site.describe(), static_cast<void*>(cmd.u.list.list), owner.index(), device.index());
    }
    command.holds = it->second;
    command.cmd.reserved |= kCommandHolds;
    return mtiaSuccess;
}

}  // namespace

std::string CommandSite::describe() const {
    if (index == kSingle) return entry;
    return fmt::format("{}: cmds[{}]", entry, index);
}

int32_t commandType(const mtiaDrvCommand& cmd) {
    int32_t type = 0;
    std::memcpy(&type, &cmd.type, sizeof(type));
    return type;
}

bool namesOtherHandles(const mtiaDrvCommand& cmd) {
    const int32_t type = commandType(cmd);
    if (type == mtiaDrvCmdWait || type == mtiaDrvCmdList) return true;
    return type == mtiaDrvCmdKernel &&
           !isBuiltinKernel(reinterpret_cast<const Kernel*>(cmd.u.kernel.kernel));
}

mtiaError_t prepareCommand(Machine& machine, Device& device, const CommandSite& site,
                           const mtiaDrvCommand& cmd, Command& command) {
    std::memcpy(&command.cmd, &cmd, sizeof(cmd));
    command.cmd.reserved = 0;  // the driver's own flags from here on
    const int32_t type = commandType(cmd);
    switch (type) {
    case mtiaDrvCmdKernel: return prepareKernel(machine, site, cmd, command);
    case mtiaDrvCmdCopy: {
        const auto& c = cmd.u.copy;
        if (c.size == 0) return mtiaSuccess;
        if (c.dst == nullptr || c.src == nullptr || rangeWraps(c.dst, c.size) ||
            rangeWraps(c.src, c.size)) {
            return reportErrorf(mtiaErrorInvalidValue,
                                "{}: copy of {} bytes from {} to {} is not valid", site.describe(),
                                c.size, c.src, c.dst);
        }
        const auto d = reinterpret_cast<uintptr_t>(c.dst);
        const auto s = reinterpret_cast<uintptr_t>(c.src);
        if (d < s + c.size && s < d + c.size) {
            return reportErrorf(mtiaErrorInvalidValue,
                                "{}: copy ranges overlap (src {}, dst {}, {} bytes)",
                                site.describe(), c.src, c.dst, c.size);
        }
        return mtiaSuccess;
    }
    case mtiaDrvCmdFill:
        if (cmd.u.fill.size != 0 &&
            (cmd.u.fill.dst == nullptr || rangeWraps(cmd.u.fill.dst, cmd.u.fill.size))) {
            return reportErrorf(mtiaErrorInvalidValue, "{}: fill of {} bytes at {} is not valid",
                                site.describe(), cmd.u.fill.size, cmd.u.fill.dst);
        }
        return mtiaSuccess;
    case mtiaDrvCmdHostFunc:
        if (cmd.u.hostFunc.fn == nullptr) {
            return reportErrorf(mtiaErrorInvalidValue, "{}: hostFunc.fn must not be NULL",
                                site.describe());
        }
        return mtiaSuccess;
    case mtiaDrvCmdWait: {
        auto it = machine.handles().queues.find(reinterpret_cast<const Queue*>(cmd.u.wait.queue));
        if (it == machine.handles().queues.end()) {
            return reportErrorf(mtiaErrorInvalidHandle, "{}: wait target {} is not a live queue",
                                site.describe(), static_cast<void*>(cmd.u.wait.queue));
        }
        // Only commands already submitted can be waited for, which also rules out cycles of waits.
        const uint64_t submitted = it->second->submitted();
        if (cmd.u.wait.value > submitted) {
            return reportErrorf(mtiaErrorInvalidValue,
                                "{}: wait for command {} of a queue that has only {} submitted",
                                site.describe(), cmd.u.wait.value, submitted);
        }
        command.holds = it->second;
        command.cmd.reserved |= kCommandHolds;
        return mtiaSuccess;
    }
    case mtiaDrvCmdTimestamp:
        if (cmd.u.timestamp.out == nullptr) {
            return reportErrorf(mtiaErrorInvalidValue, "{}: timestamp.out must not be NULL",
                                site.describe());
        }
        return mtiaSuccess;
    case mtiaDrvCmdList: return prepareList(machine, device, site, cmd, command);
    default:
        return reportErrorf(mtiaErrorInvalidValue, "{}: unknown command type {}", site.describe(),
                            type);
    }
}

void pickInjectedFaults(FaultInjector& faults, Command& command) {
    if (!faults.hasKernelRules()) return;
    if (command.cmd.type == mtiaDrvCmdKernel) {
        if (faults.nextLaunchFaults(command.kernel().name))
            command.cmd.reserved |= kCommandInjectFault;
        return;
    }
    if (command.cmd.type != mtiaDrvCmdList || !command.list().hasKernels()) return;
    // Every launch of the run counts, also those after the first picked one (as if submitted one by
    // one).
    const std::span<const Command> subs = command.list().commands();
    for (size_t i = 0; i < subs.size(); ++i) {
        if (subs[i].cmd.type != mtiaDrvCmdKernel || !faults.nextLaunchFaults(subs[i].kernel().name))
            continue;
        if ((command.cmd.reserved & kCommandInjectFault) == 0) {
            command.cmd.reserved |= kCommandInjectFault;
            command.faultAt = i;
        }
    }
}

}  // namespace mtia::sim
