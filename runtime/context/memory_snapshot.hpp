// Memory snapshots of the whole process (ABI mtiaMemorySnapshot,
// mtiaMemoryDumpSnapshot, MTIA_OOM_SNAPSHOT): a copy of every started
// device allocator's state, assembled into PyTorch's snapshot dict and
// written as JSON or pickle.
#pragma once

#include <mtia/mtia_types.h>

#include <string>

namespace mtia {

class Runtime;

// The snapshot's bytes in memory from malloc (the caller frees data; one byte more than size holds
// a NUL). traces: include each device's trace ring. Thread-safe; blocking (each device's lock while
// copying, the provider while resolving); throws Error(MemoryAllocation), std::bad_alloc.
mtiaBuffer memorySnapshot(Runtime& rt, mtiaSnapshotFormat format, bool traces);

// memorySnapshot written to path. Throws Error(InvalidValue) naming the path and the system's
// reason when it cannot be written.
void dumpMemorySnapshot(Runtime& rt, const std::string& path, mtiaSnapshotFormat format,
                        bool traces);

// With MTIA_OOM_SNAPSHOT set: an out-of-memory observer that dumps a snapshot (with traces) to that
// path while history is recorded, before the error returns. Call once, at initialisation.
void installOomSnapshot(Runtime& rt, const std::string& path);

}  // namespace mtia
