#include "asymmetric_fence.hpp"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace mtia::sim {
namespace {

bool registerMembarrier() noexcept {
#if defined(__SANITIZE_THREAD__)
    return false;
#else
    const long supported = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (supported < 0 || (supported & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return false;
    return syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
#endif
}

}  // namespace

bool asymmetricFencesAvailable() noexcept {
    static const bool available = registerMembarrier();
    return available;
}

bool heavyFence() noexcept {
    if (!asymmetricFencesAvailable()) {
        fullFence();
        return true;
    }
    return syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0;
}

}  // namespace mtia::sim
