// The framework context provider (mtiaMemorySetContextProvider) that records the Python stack of
// each allocation made while history recording runs with Python stacks.
#pragma once

namespace torch_mtia {

// Installs the provider once; call without holding the GIL (the runtime waits for callbacks that
// take it). Throws on failure.
void installPythonContextProvider();

}  // namespace torch_mtia
