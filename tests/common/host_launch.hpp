// Host functions queued on a stream with a C++ callable.
#pragma once

#include <mtia/mtia.h>

#include <functional>

namespace mtia_test {

// Queues fn as a host function on s; fn is freed after it ran (or at once when the launch failed).
// It runs once: a host-function node of a replayed graph needs a callable that outlives the graph.
mtiaError_t launchHost(mtiaStream_t s, std::function<void()> fn);

}  // namespace mtia_test
