// The driver's table of entry points and the function that hands it out. The
// entries live in ops_*.cpp, by area.
#include "ops_common.hpp"
#include "sim_driver.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <type_traits>

// platform/driver/builtin_drivers.hpp declares this entry with the ABI's getter type, for the
// runtime, without including this driver's headers: the two declarations must not drift apart.
static_assert(std::is_same_v<decltype(&mtiaSimDriverGetOps), mtiaDriverGetOpsFn>);

namespace mtia::sim {
namespace {

constexpr mtiaDriverOps kOps = {
    .version = MTIA_DRIVER_API_VERSION,
    .structSize = sizeof(mtiaDriverOps),
    .init = ops::init,
    .getName = ops::getName,
    .deviceGetCount = ops::deviceGetCount,
    .deviceGetInfo = ops::deviceGetInfo,
    .deviceGetStatus = ops::deviceGetStatus,
    .deviceSynchronize = ops::deviceSynchronize,
    .memGetInfo = ops::memGetInfo,
    .vaReserve = ops::vaReserve,
    .vaRelease = ops::vaRelease,
    .memCreate = ops::memCreate,
    .memRelease = ops::memRelease,
    .memMap = ops::memMap,
    .memUnmap = ops::memUnmap,
    .queueCreate = ops::queueCreate,
    .queueDestroy = ops::queueDestroy,
    .queueSubmit = ops::queueSubmit,
    .queueQuery = ops::queueQuery,
    .queueWait = ops::queueWait,
    .lastErrorMessage = ops::lastError,
    .clockNow = ops::clockNow,
    .moduleLoad = ops::moduleLoad,
    .moduleUnload = ops::moduleUnload,
    .moduleGetKernel = ops::moduleGetKernel,
    .kernelGetInfo = ops::kernelGetInfo,
    .deviceSetPeerAccess = ops::deviceSetPeerAccess,
    .isDriverThread = ops::isDriverThread,
    .queueGetCounts = ops::queueGetCounts,
    .commandListCreate = ops::commandListCreate,
    .commandListDestroy = ops::commandListDestroy,
    .memReportAllocated = ops::memReportAllocated,
    .ipcMemExport = ops::ipcMemExport,
    .ipcMemRevoke = ops::ipcMemRevoke,
    .ipcMemOpen = ops::ipcMemOpen,
    .ipcMemClose = ops::ipcMemClose,
    .ipcEventExport = ops::ipcEventExport,
    .ipcEventOpen = ops::ipcEventOpen,
    .ipcEventClose = ops::ipcEventClose,
    .ipcEventRecord = ops::ipcEventRecord,
    .ipcEventComplete = ops::ipcEventComplete,
    .ipcEventLatest = ops::ipcEventLatest,
    .ipcEventWait = ops::ipcEventWait,
    .ipcMemSize = ops::ipcMemSize,
    .machineGetSpec = ops::machineGetSpec,
    .machineDescribeDevice = ops::machineDescribeDevice,
    .deviceGetFaultWord = ops::deviceGetFaultWord,
    .memGetAllocatedWords = ops::memGetAllocatedWords,
    .deviceReset = ops::deviceReset,
};

}  // namespace
}  // namespace mtia::sim

// Thread-safe, works before init. Copies whole entries only: a structSize that ends inside a
// function pointer gets the entries before it. Errors: mtiaErrorNotSupported (another major
// version), mtiaErrorInvalidValue (ops NULL or structSize smaller than the version and size
// fields).
extern "C" mtiaError_t mtiaSimDriverGetOps(uint32_t apiVersion, mtiaDriverOps* ops) {
    using mtia::sim::kOps;
    using mtia::sim::reportErrorf;
    if (MTIA_DRIVER_API_MAJOR(apiVersion) != MTIA_DRIVER_API_VERSION_MAJOR) {
        return reportErrorf(mtiaErrorNotSupported,
                            "mtiaDriverGetOps: the sim driver implements API {}.{}, not {}.{}",
                            MTIA_DRIVER_API_VERSION_MAJOR, MTIA_DRIVER_API_VERSION_MINOR,
                            MTIA_DRIVER_API_MAJOR(apiVersion), MTIA_DRIVER_API_MINOR(apiVersion));
    }
    if (ops == nullptr)
        return reportErrorf(mtiaErrorInvalidValue, "mtiaDriverGetOps: ops must not be NULL");
    constexpr size_t kHeader = offsetof(mtiaDriverOps, init);
    if (ops->structSize < kHeader) {
        return reportErrorf(
            mtiaErrorInvalidValue,
            "mtiaDriverGetOps: ops->structSize {} is smaller than the table header ({})",
            ops->structSize, kHeader);
    }
    const size_t room = std::min<size_t>(ops->structSize, sizeof(mtiaDriverOps));
    const size_t bytes = kHeader + (room - kHeader) / sizeof(void*) * sizeof(void*);
    mtiaDriverOps filled = kOps;
    filled.structSize = static_cast<uint32_t>(bytes);
    std::memcpy(ops, &filled, bytes);
    return mtiaSuccess;
}
