#include "engine.hpp"

#include "clock.hpp"
#include "command.hpp"
#include "command_list.hpp"
#include "config.hpp"
#include "device.hpp"
#include "kernels.hpp"
#include "machine.hpp"
#include "queue.hpp"

#include <cxxabi.h>
#include <fmt/format.h>

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
  if (launch->faulted) return;  // the first report explains the failure; later ones are consequences
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

// argBuffer receives the launch's own copy of its argument values (kMaxArgumentBytes, 16-aligned): the
// command's copy stays untouched, so a list's commands serve every run, also concurrent ones.
void runKernel(Device& device, const Queue& queue, const Command& command, bool injectFault, uint64_t index,
               unsigned char* argBuffer) {
  const Kernel& kernel = command.kernel();
  const auto& k = command.cmd.u.kernel;
  if (injectFault) {
    device.recordFault(
        fmt::format("kernel '{}' on {}: injected fault (MTIA_SIM_FAULTS)", kernel.name, placeOf(queue, index)));
    return;
  }
  void* argv[MTIA_SIM_MAX_KERNEL_ARGS];
  if (kernel.numArgs > 0) command.args.copyTo(kernel, argBuffer, argv);
  Launch launch;
  launch.device = &device;
  mtiaKernelContext ctx{};
  ctx.structSize = sizeof(ctx);
  ctx.device = device.index();
  ctx.gridDim = k.grid;
  ctx.blockDim = k.block;
  ctx.sharedMem = k.sharedMem > 0 ? sharedMemory() : nullptr;
  ctx.sharedMemSize = k.sharedMem;
  ctx.fault = launchFault;
  ctx.isDeviceRange = launchIsDeviceRange;
  ctx.driverData = &launch;
  std::string thrown;
  const bool ok = runGuarded(
      [&] {
        for (uint32_t z = 0; z < k.grid.z; ++z) {
          for (uint32_t y = 0; y < k.grid.y; ++y) {
            for (uint32_t x = 0; x < k.grid.x; ++x) {
              ctx.blockIdx = mtiaDim3{x, y, z};
              kernel.fn(&ctx, argv);
              if (launch.faulted) return;  // a faulted launch stops; the device is unusable anyway
            }
          }
        }
      },
      thrown);
  if (!ok) launchFault(&ctx, thrown.c_str());
  if (launch.faulted) {
    device.recordFault(
        fmt::format("kernel '{}' on {} faulted: {}", kernel.name, placeOf(queue, index), launch.message));
  }
}

// The runtime validates copies; this only keeps a copy from touching reserved but unmapped device
// addresses, which would crash the process instead of faulting the device.
bool copyEndpointOk(const Device& device, const void* p, uint64_t size, const char* name, std::string& message) {
  const Device* owner = device.machine().deviceForAddress(p);
  if (owner == nullptr || owner->memory().isMapped(p, size)) return true;
  message = fmt::format("illegal address: copy {}={} ({} bytes) is not mapped memory of device {}", name, p, size,
                        owner->index());
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
    device.recordFault(
        fmt::format("illegal address: fill dst={} ({} bytes) is not device memory of device {} or of "
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

// What a command, and each command of a list, goes through: the queue's injected delay, then its work
// unless the device faulted (timestamps are still written: they are bookkeeping rather than device work,
// and writing them keeps event timing readable).
inline void step(Device& device, const Queue& queue, const Command& command, bool injectFault, uint64_t index,
                 unsigned char* argBuffer) {
  if (queue.slowNs() != 0) sleepNs(queue.slowNs());
  if (device.faulted()) {
    if (command.cmd.type == mtiaDrvCmdTimestamp) *command.cmd.u.timestamp.out = monotonicNs();
    return;
  }
  switch (command.cmd.type) {
    case mtiaDrvCmdKernel: runKernel(device, queue, command, injectFault, index, argBuffer); break;
    case mtiaDrvCmdCopy: runCopy(device, command); break;
    case mtiaDrvCmdFill: runFill(device, command); break;
    case mtiaDrvCmdHostFunc: runHostFunc(device, queue, command, index); break;
    case mtiaDrvCmdWait: break;  // the scheduler ran it only once it was satisfied
    case mtiaDrvCmdTimestamp: *command.cmd.u.timestamp.out = monotonicNs(); break;
    default: break;  // submit rejects other types; lists are run by runList
  }
}

// The list's commands in order. Once the device faulted nothing more runs; the remaining timestamps are
// written at once, without the queue's injected delay for commands that do not run.
void runList(Device& device, const Queue& queue, const Command& command, unsigned char* argBuffer) {
  const std::span<const Command> commands = command.list().commands();
  const uint64_t faultAt = (command.flags() & kCommandInjectFault) != 0 ? command.faultAt : kNotInList;
  const size_t n = commands.size();
  for (size_t i = 0; i < n; ++i) {
    if (device.faulted()) {
      for (; i < n; ++i) {
        if (commands[i].cmd.type == mtiaDrvCmdTimestamp) *commands[i].cmd.u.timestamp.out = monotonicNs();
      }
      return;
    }
    step(device, queue, commands[i], i == faultAt, i, argBuffer);
  }
}

}  // namespace

void execute(Device& device, const Queue& queue, Command& command) {
  alignas(16) unsigned char argBuffer[kMaxArgumentBytes];  // written only by launches with arguments
  if (command.cmd.type == mtiaDrvCmdList) {
    runList(device, queue, command, argBuffer);
    return;
  }
  step(device, queue, command, (command.flags() & kCommandInjectFault) != 0, kNotInList, argBuffer);
}

}  // namespace mtia::sim
