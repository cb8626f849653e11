// Memory snapshots on request of another process (mtia-smi mem snapshot -p
// PID, reference/smi-topology-ipc.md section 4.9): the registry's request
// watcher (platform/registry/request_watcher.hpp) calls the handler installed
// here, which writes the same snapshot as mtiaMemoryDumpSnapshot (with
// traces, present only while history is recorded).
#pragma once

namespace mtia {

class Runtime;

// Installs the handler for rt (once, at initialisation). Thread-safe; never blocks. Requests
// arriving after the runtime started draining at exit are answered "failed" rather than served.
void installRemoteSnapshot(Runtime& rt);
// Called at exit before the runtime drains: no snapshot is taken from then on.
void stopRemoteSnapshot();

}  // namespace mtia
