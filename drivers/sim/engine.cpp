#include "engine.hpp"

#include "clock.hpp"
#include "command.hpp"
#include "command_list.hpp"
#include "config.hpp"
#include "device.hpp"
#include "kernel_signals.hpp"
#include "kernels.hpp"
#include "machine.hpp"
#include "queue.hpp"

#include <cxxabi.h>
#include <fmt/format.h>
#include <signal.h>

#include <cstring>
#include <exception>
#include <memory>

namespace mtia::sim {
namespace {

// What kernel callbacks reach through ctx->driverData.
struct Launch {
    const Device* device = nullptr;
    bool faulted = false;
    std::string message;
};

void launchFault(const mtiaKernelContext* ctx, const char* message) {
    auto* launch = static_cast<Launch*>(ctx->driverData);
    if (launch->faulted)
        return;  // the first report explains the failure; later ones are consequences
    launch->faulted = true;
    launch->message = message != nullptr ? message : "(no message)";
}

int launchIsDeviceRange(const mtiaKernelContext* ctx, const void* ptr, uint64_t bytes) {
    return static_cast<const Launch*>(ctx->driverData)->device->canAccess(ptr, bytes) ? 1 : 0;
}

// Runs fn and turns anything it throws into a fault message; false when it threw.
template <class Fn>
bool runGuarded(Fn&& fn, std::string& message) {
    try {
        fn();
        return true;
    } catch (abi::__forced_unwind&) {
        throw;  // thread cancellation must unwind
    } catch (const std::exception& e) {
        message = fmt::format("exception escaped: {}", e.what());
    } catch (...) {
        message = "exception escaped (not a std::exception)";
    }
    return false;
}

unsigned char* sharedMemory() {
    thread_local std::unique_ptr<unsigned char[]> buffer(new unsigned char[kSharedMemPerBlock]);
    return buffer.get();
}

constexpr uint64_t kNotInList = UINT64_MAX;

// "queue 3", "queue 3 (command 7 of a list)": where a fault happened, for its message.
std::string placeOf(const Queue& queue, uint64_t index) {
    if (index == kNotInList) return fmt::format("queue {}", queue.number());
    return fmt::format("queue {} (command {} of a list)", queue.number(), index);
}

// What one execute() call needs to run commands, set up once for all the commands of a list: the
// kernel context's fixed fields, and room for a launch's own copy of its argument values (the
// command's copy stays untouched, so a list's commands serve every run, also concurrent ones).
struct Runner {
    Runner(Device& d, const Queue& q) : device(d), queue(q) {
        launch.device = &device;
        ctx.structSize = sizeof(ctx);
        ctx.device = device.index();
        ctx.fault = launchFault;
        ctx.isDeviceRange = launchIsDeviceRange;
        ctx.driverData = &launch;
    }
    Device& device;
    const Queue& queue;
    Launch launch;  // a fault stops the run, so one serves every launch of it
    KernelTrap** trapSlot = &tKernelTrap;  // this engine thread's (kernel_signals.hpp)
    mtiaKernelContext ctx{};
    void* argv[MTIA_SIM_MAX_KERNEL_ARGS];
    alignas(16) unsigned char args[kMaxArgumentBytes];  // written only by launches with arguments
};

bool isMemorySignal(int signo) {
    return signo == SIGSEGV || signo == SIGBUS;
}

// Where a faulting address lies: the memory of which device, mapped or only reserved, or none.
std::string describeAddress(const Machine& machine, const void* address) {
    const Device* owner = machine.deviceForAddress(address);
    if (owner == nullptr) return "not device memory";
    if (owner->memory().isMapped(address, 1))
        return fmt::format("mapped memory of device {}", owner->index());
    return fmt::format("in device {}'s address range, reserved but not mapped", owner->index());
}

[[gnu::cold, gnu::noinline]] std::string
signalFaultMessage(const Runner& r, const Kernel& kernel, const KernelTrap& trap, uint64_t index) {
    const int signo = trap.signo;
    std::string what = signalName(signo);
    if (isMemorySignal(signo)) {
        void* address = trap.address;
        what = fmt::format("illegal address: {} at address {} ({})", what, address,
                           describeAddress(r.device.machine(), address));
    }
    return fmt::format("kernel '{}' of module {} on {} faulted: {}", kernel.name,
                       kernel.module != nullptr ? fmt::format("'{}'", kernel.module->path())
                                                : std::string("built-in"),
                       placeOf(r.queue, index), what);
}

void runKernel(Runner& r, const Command& command, bool injectFault, uint64_t index) {
    const Kernel& kernel = command.kernel();
    const auto& k = command.cmd.u.kernel;
    if (injectFault) {
        r.device.recordFault(fmt::format("kernel '{}' on {}: injected fault (MTIA_SIM_FAULTS)",
                                         kernel.name, placeOf(r.queue, index)));
        return;
    }
    if (kernel.numArgs > 0) command.args.copyTo(kernel, r.args, r.argv);
    mtiaKernelContext& ctx = r.ctx;
    ctx.gridDim = k.grid;
    ctx.blockDim = k.block;
    ctx.sharedMem = k.sharedMem > 0 ? sharedMemory() : nullptr;
    ctx.sharedMemSize = k.sharedMem;
    Launch& launch = r.launch;
    std::string thrown;
    // A signal the kernel raises comes back here (kernel_signals.hpp). No mask is saved: the launch
    // path makes no system call; the mask is restored on the fault path only.
    KernelTrap trap;
    if (sigsetjmp(trap.env, 0) != 0) {
        restoreEngineSignalMask();
        r.device.recordFault(signalFaultMessage(r, kernel, trap, index),
                             isMemorySignal(trap.signo) ? mtiaErrorIllegalAddress
                                                        : mtiaErrorLaunchFailure);
        return;
    }
    *r.trapSlot = &trap;
    const bool ok = runGuarded(
        [&] {
            for (uint32_t z = 0; z < k.grid.z; ++z) {
                for (uint32_t y = 0; y < k.grid.y; ++y) {
                    for (uint32_t x = 0; x < k.grid.x; ++x) {
                        ctx.blockIdx = mtiaDim3{x, y, z};
                        kernel.fn(&ctx, r.argv);
                        if (launch.faulted)
                            return;  // a faulted launch stops; the device is unusable anyway
                    }
                }
            }
        },
        thrown);
    *r.trapSlot = nullptr;
    if (!ok) launchFault(&ctx, thrown.c_str());
    if (launch.faulted) {
        r.device.recordFault(fmt::format("kernel '{}' on {} faulted: {}", kernel.name,
                                         placeOf(r.queue, index), launch.message));
    }
}

// The runtime validates copies; this only keeps a copy from touching reserved but unmapped device
// addresses, which would crash the process instead of faulting the device.
bool copyEndpointOk(const Device& device, const void* p, uint64_t size, const char* name,
                    std::string& message) {
    const Device* owner = device.machine().deviceForAddress(p);
    if (owner == nullptr || owner->memory().isMapped(p, size)) return true;
    message =
        fmt::format("illegal address: copy {}={} ({} bytes) is not mapped memory of device {}",
                    name, p, size, owner->index());
    return false;
}

void runCopy(Device& device, const Command& command) {
    const auto& c = command.cmd.u.copy;
    if (c.size == 0) return;
    std::string message;
    if (!copyEndpointOk(device, c.dst, c.size, "dst", message) ||
        !copyEndpointOk(device, c.src, c.size, "src", message)) {
        device.recordFault(message);
        return;
    }
    std::memcpy(c.dst, c.src, c.size);
}

void runFill(Device& device, const Command& command) {
    const auto& f = command.cmd.u.fill;
    if (f.size == 0) return;
    if (!device.canAccess(f.dst, f.size)) {
        device.recordFault(fmt::format(
            "illegal address: fill dst={} ({} bytes) is not device memory of device {} or of "
            "a peer it may access",
            f.dst, f.size, device.index()));
        return;
    }
    std::memset(f.dst, static_cast<int>(f.value & 0xffu), f.size);
}

void runHostFunc(Device& device, const Queue& queue, const Command& command, uint64_t index) {
    const auto& h = command.cmd.u.hostFunc;
    std::string thrown;
    if (!runGuarded([&] { h.fn(h.userData); }, thrown)) {
        device.recordFault(fmt::format("host function on {}: {}", placeOf(queue, index), thrown));
    }
}

void writeTimestamp(const Command& command) {
    *command.cmd.u.timestamp.out = monotonicNs();
}

// What a command, and each command of a list, goes through: the queue's injected delay, then its
// work unless the device faulted. False (nothing run) when it has: the caller still writes
// timestamps, which are bookkeeping rather than device work (writing them keeps event timing
// readable).
inline bool step(Runner& r, const Command& command, bool injectFault, uint64_t index) {
    if (r.queue.slowNs() != 0) sleepNs(r.queue.slowNs());
    if (r.device.faulted()) return false;
    switch (command.cmd.type) {
    case mtiaDrvCmdKernel: runKernel(r, command, injectFault, index); break;
    case mtiaDrvCmdCopy: runCopy(r.device, command); break;
    case mtiaDrvCmdFill: runFill(r.device, command); break;
    case mtiaDrvCmdHostFunc: runHostFunc(r.device, r.queue, command, index); break;
    case mtiaDrvCmdWait: break;  // the scheduler ran it only once it was satisfied
    case mtiaDrvCmdTimestamp: writeTimestamp(command); break;
    default: break;  // submit rejects other types; lists are run by runList
    }
    return true;
}

// The list's commands in order. Once the device faulted nothing more runs; the remaining timestamps
// are written at once, without the queue's injected delay.
void runList(Runner& r, const Command& command) {
    const std::span<const Command> commands = command.list().commands();
    const uint64_t faultAt =
        (command.flags() & kCommandInjectFault) != 0 ? command.faultAt : kNotInList;
    const size_t n = commands.size();
    size_t i = 0;
    while (i < n && step(r, commands[i], i == faultAt, i)) ++i;
    for (; i < n; ++i) {
        if (commands[i].cmd.type == mtiaDrvCmdTimestamp) writeTimestamp(commands[i]);
    }
}

}  // namespace

void execute(Device& device, const Queue& queue, Command& command) {
    Runner runner(device, queue);
    if (command.cmd.type == mtiaDrvCmdList) {
        runList(runner, command);
        return;
    }
    if (!step(runner, command, (command.flags() & kCommandInjectFault) != 0, kNotInList) &&
        command.cmd.type == mtiaDrvCmdTimestamp) {
        writeTimestamp(command);
    }
}

}  // namespace mtia::sim
