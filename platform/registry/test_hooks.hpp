// Points where tests stop or kill a process on purpose (creator dying half-way,
// owner of the admission mutex killed). Unset in production: one relaxed load.
#pragma once

namespace mtia::registry::testing {

enum class Point {
    AfterTruncate,      // object created and sized, nothing written
    AfterInitializing,  // state == Initializing, header not filled
    BeforeReady,        // header and mutex filled, state not yet Ready
    HoldingAdmission,   // inside reserve(), admission mutex held, nothing counted yet
    BeforeMap,          // object file opened and checked, not yet opened again by Boost to map it
};

using Hook = void (*)(Point);
void setHook(Hook hook);
void runHook(Point point);

}  // namespace mtia::registry::testing
