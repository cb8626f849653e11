// What an engine does with one command.
#pragma once

namespace mtia::sim {

class Device;
class Queue;
struct Command;

// Runs command of queue on device on the calling engine thread. Faults (bad addresses, kernels that
// report one, exceptions escaping kernels or host functions) are recorded on the device, never
// thrown. On a faulted device the command completes without running. A command list runs its
// commands in order, each as a command of its own would run (the queue's injected delay included),
// and stops once the device faulted.
void execute(Device& device, const Queue& queue, Command& command);

}  // namespace mtia::sim
