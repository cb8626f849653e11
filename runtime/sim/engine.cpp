#include "engine.hpp"

#include "clock.hpp"
#include "command.hpp"
#include "config.hpp"
#include "device.hpp"
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

void runKernel(Device& device, const Queue& queue, Command& command) {
  const Kernel& kernel = command.kernel();
  const auto& k = command.cmd.u.kernel;
  if ((command.flags() & kCommandInjectFault) != 0) {
    device.recordFault(
        fmt::format("kernel '{}' on queue {}: injected fault (MTIA_SIM_FAULTS)", kernel.name, queue.number()));
    return;
  }
  void* argv[MTIA_SIM_MAX_KERNEL_ARGS];
  if (kernel.numArgs > 0) command.args.pointers(kernel, argv);
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
    device.recordFault(fmt::format("kernel '{}' on queue {} faulted: {}", kernel.name, queue.number(), launch.message));
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

void runHostFunc(Device& device, const Queue& queue, const Command& command) {
  const auto& h = command.cmd.u.hostFunc;
  std::string thrown;
  if (!runGuarded([&] { h.fn(h.userData); }, thrown)) {
    device.recordFault(fmt::format("host function on queue {}: {}", queue.number(), thrown));
  }
}

}  // namespace

void execute(Device& device, const Queue& queue, Command& command) {
  if (queue.slowNs() != 0) sleepNs(queue.slowNs());
  if (device.faulted()) {
    // Timestamps are bookkeeping rather than device work: writing them keeps event timing readable.
    if (command.cmd.type == mtiaDrvCmdTimestamp) *command.cmd.u.timestamp.out = monotonicNs();
    return;
  }
  switch (command.cmd.type) {
    case mtiaDrvCmdKernel: runKernel(device, queue, command); break;
    case mtiaDrvCmdCopy: runCopy(device, command); break;
    case mtiaDrvCmdFill: runFill(device, command); break;
    case mtiaDrvCmdHostFunc: runHostFunc(device, queue, command); break;
    case mtiaDrvCmdWait: break;  // the scheduler ran it only once it was satisfied
    case mtiaDrvCmdTimestamp: *command.cmd.u.timestamp.out = monotonicNs(); break;
    default: break;  // submit rejects other types
  }
}

}  // namespace mtia::sim
