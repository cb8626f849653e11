// Validation of commands and the copy the driver keeps of them: one code path
// for queueSubmit (a command on its way into a queue) and commandListCreate
// (each command of a list), so both accept and refuse exactly the same things.
#pragma once

#include "command.hpp"

#include <mtia/mtia_driver.h>

#include <cstdint>
#include <string>

namespace mtia::sim {

class Device;
class FaultInjector;
class Machine;

// Where a command came from, for messages: the entry, and its index in a list.
struct CommandSite {
    static constexpr uint64_t kSingle = UINT64_MAX;
    const char* entry;
    uint64_t index = kSingle;
    // "queueSubmit", "commandListCreate: cmds[3]".
    std::string describe() const;
};

// The command's type as plain bits: a caller may pass a number that is no enumerator, and loading
// that as the enum would be undefined behaviour (UBSan reports it) before it could be rejected.
int32_t commandType(const mtiaDrvCommand& cmd);

// Whether cmd names handles besides its queue (module kernels, wait targets, lists): looking those
// up needs the handle lock.
bool namesOtherHandles(const mtiaDrvCommand& cmd);

// Validates cmd for a queue of device and fills command from it: kernel argument values copied,
// references taken to what must outlive it (a module kernel's module, a wait's target queue, a
// list). Called with machine.handles().mu held shared. Decides no fault injection (see
// pickInjectedFaults). On failure command may hold references already (the owner releases it).
// Errors: mtiaErrorInvalidValue (malformed command, a list of another device),
// mtiaErrorInvalidHandle (kernel, wait target or list not live).
mtiaError_t prepareCommand(Machine& machine, Device& device, const CommandSite& site,
                           const mtiaDrvCommand& cmd, Command& command);

// MTIA_SIM_FAULTS kernel rules, decided per submission: counts the launches a prepared command
// makes (a kernel, or every kernel of a list) and marks the command when the plan picks one. Costs
// one test without kernel rules.
void pickInjectedFaults(FaultInjector& faults, Command& command);

}  // namespace mtia::sim
