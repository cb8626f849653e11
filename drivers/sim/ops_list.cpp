// Entries about command lists (driver ABI 1.2).
#include "command_list.hpp"
#include "ops_common.hpp"
#include "prepare.hpp"

#include <limits>
#include <memory>

namespace mtia::sim::ops {

// Thread-safe. Validates every command as queueSubmit would (prepare.hpp), copies argument values
// and takes references to module kernels' modules for the life of the list. Errors:
// mtiaErrorInvalidDevice, mtiaErrorInvalidValue (NULL, count 0, a wait or list command, a malformed
// command: the message names cmds[i]), mtiaErrorInvalidHandle (a kernel of no loaded module),
// mtiaErrorMemoryAllocation.
mtiaError_t commandListCreate(int32_t dev, const mtiaDrvCommand* cmds, uint64_t count,
                              mtiaDrvCommandList* list) {
    return guarded("commandListCreate", [&] {
        Device* device = nullptr;
        if (mtiaError_t err = deviceFor("commandListCreate", dev, device); err != mtiaSuccess)
            return err;
        if (cmds == nullptr || list == nullptr)
            return nullArgument("commandListCreate", "cmds and list");
        if (count == 0)
            return reportErrorf(mtiaErrorInvalidValue,
                                "commandListCreate: count must be at least 1");
        if (count > std::numeric_limits<size_t>::max() / sizeof(Command)) {
            return reportErrorf(mtiaErrorMemoryAllocation,
                                "commandListCreate: {} commands do not fit in host memory", count);
        }
        auto created = std::make_shared<CommandList>(*device, static_cast<size_t>(count));
        Machine& machine = device->machine();
        Handles& handles = machine.handles();
        {
            std::shared_lock lock(
                handles.mu);  // module kernels stay loaded while their references are taken
            std::span<Command> commands = created->commands();
            for (uint64_t i = 0; i < count; ++i) {
                const CommandSite site{"commandListCreate", i};
                const int32_t type = commandType(cmds[i]);
                if (type == mtiaDrvCmdWait || type == mtiaDrvCmdList) {
                    return reportErrorf(mtiaErrorInvalidValue,
                                        "{}: a {} command cannot be part of a command list",
                                        site.describe(), type == mtiaDrvCmdWait ? "wait" : "list");
                }
                // On failure the list releases what its commands took so far.
                if (mtiaError_t err = prepareCommand(machine, *device, site, cmds[i], commands[i]);
                    err != mtiaSuccess) {
                    return err;
                }
                if (type == mtiaDrvCmdKernel) created->setHasKernels();
            }
        }
        std::unique_lock lock(handles.mu);
        const CommandList* raw = created.get();
        handles.lists.emplace(raw, std::move(created));
        *list = reinterpret_cast<mtiaDrvCommandList>(const_cast<CommandList*>(raw));
        return mtiaSuccess;
    });
}

// Thread-safe, returns at once: submitted runs hold references of their own and still complete.
// Errors: mtiaErrorInvalidHandle.
mtiaError_t commandListDestroy(mtiaDrvCommandList list) {
    return guarded("commandListDestroy", [&] {
        Machine* machine = nullptr;
        if (mtiaError_t err = machineFor("commandListDestroy", machine); err != mtiaSuccess)
            return err;
        Handles& handles = machine->handles();
        std::shared_ptr<CommandList> dropped;  // released after the lock (it may dlclose() modules)
        std::unique_lock lock(handles.mu);
        auto it = handles.lists.find(reinterpret_cast<const CommandList*>(list));
        if (it == handles.lists.end()) {
            return reportErrorf(mtiaErrorInvalidHandle,
                                "commandListDestroy: {} is not a live command list",
                                static_cast<void*>(list));
        }
        dropped = std::move(it->second);
        handles.lists.erase(it);
        lock.unlock();
        return mtiaSuccess;
    });
}

}  // namespace mtia::sim::ops
