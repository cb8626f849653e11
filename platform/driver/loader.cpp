#include "platform/driver/loader.hpp"

#include "core/error.hpp"
#include "core/log.hpp"

#include <dlfcn.h>

#include <cstddef>
#include <cstring>
#include <iterator>
#include <vector>

namespace mtia::driver {
namespace {

// Stand-ins for optional entries a driver leaves out.
const char* noMessage() { return ""; }
mtiaError_t noClock(uint64_t*) { return mtiaErrorNotSupported; }
mtiaError_t noModuleLoad(const char*, mtiaDrvModule*) { return mtiaErrorNotSupported; }
mtiaError_t noModuleUnload(mtiaDrvModule) { return mtiaErrorNotSupported; }
mtiaError_t noModuleGetKernel(mtiaDrvModule, const char*, mtiaDrvKernel*) { return mtiaErrorNotSupported; }
mtiaError_t noKernelGetInfo(mtiaDrvKernel, uint32_t*, uint32_t*) { return mtiaErrorNotSupported; }
mtiaError_t noPeerAccess(int32_t, int32_t, int32_t) { return mtiaErrorNotSupported; }
int32_t noDriverThreads() { return 0; }

struct Entry {
  const char* name;
  size_t offset;
};

#define MTIA_OPS_ENTRY(field) Entry{#field, offsetof(mtiaDriverOps, field)}
constexpr Entry kMandatory[] = {
    MTIA_OPS_ENTRY(init),         MTIA_OPS_ENTRY(getName),      MTIA_OPS_ENTRY(deviceGetCount),
    MTIA_OPS_ENTRY(deviceGetInfo), MTIA_OPS_ENTRY(deviceGetStatus), MTIA_OPS_ENTRY(deviceSynchronize),
    MTIA_OPS_ENTRY(memGetInfo),   MTIA_OPS_ENTRY(vaReserve),    MTIA_OPS_ENTRY(vaRelease),
    MTIA_OPS_ENTRY(memCreate),    MTIA_OPS_ENTRY(memRelease),   MTIA_OPS_ENTRY(memMap),
    MTIA_OPS_ENTRY(memUnmap),     MTIA_OPS_ENTRY(queueCreate),  MTIA_OPS_ENTRY(queueDestroy),
    MTIA_OPS_ENTRY(queueSubmit),  MTIA_OPS_ENTRY(queueQuery),   MTIA_OPS_ENTRY(queueWait),
};
#undef MTIA_OPS_ENTRY

bool present(const mtiaDriverOps& ops, const Entry& e) {
  void* p = nullptr;
  std::memcpy(&p, reinterpret_cast<const char*>(&ops) + e.offset, sizeof(p));
  return p != nullptr;
}

std::string libraryFolder(const std::string& libraryDir) { return libraryDir.empty() ? "" : libraryDir + "/mtia/"; }

mtiaDriverGetOpsFn openDriver(const std::string& spec, const std::string& libraryDir, std::string* source) {
  std::vector<std::string> candidates;
  if (spec.find('/') != std::string::npos) {
    candidates.push_back(spec);
  } else {
    const std::string file = "mtia_driver_" + spec + ".so";
    if (!libraryDir.empty()) candidates.push_back(libraryFolder(libraryDir) + file);
    candidates.push_back(file);
  }
  std::string errors;
  for (const std::string& path : candidates) {
    // RTLD_NODELETE: a driver owns threads and mappings for the whole process.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (handle == nullptr) {
      const char* why = dlerror();
      errors += fmt::format("{}{}", errors.empty() ? "" : "; ", why ? why : path);
      continue;
    }
    void* sym = dlsym(handle, MTIA_DRIVER_GET_OPS_SYMBOL);
    if (sym == nullptr)
      fail(mtiaErrorInitializationError, "MTIA_DRIVER='{}': {} does not export {}", spec, path,
           MTIA_DRIVER_GET_OPS_SYMBOL);
    *source = path;
    mtiaDriverGetOpsFn fn;
    std::memcpy(&fn, &sym, sizeof(fn));
    return fn;
  }
  fail(mtiaErrorInitializationError,
       "MTIA_DRIVER='{}': cannot load the driver ({}); expected a built-in driver name (sim), a driver name N with "
       "mtia_driver_N.so on the library path, or a path to a driver shared object",
       spec, errors);
}

}  // namespace

void validateOps(mtiaDriverOps& ops, const std::string& source) {
  const uint32_t major = MTIA_DRIVER_API_MAJOR(ops.version);
  if (major != MTIA_DRIVER_API_VERSION_MAJOR)
    fail(mtiaErrorInitializationError, "driver {} implements driver ABI {}.{}; this runtime needs {}.x", source, major,
         MTIA_DRIVER_API_MINOR(ops.version), MTIA_DRIVER_API_VERSION_MAJOR);
  constexpr size_t kMandatoryEnd = offsetof(mtiaDriverOps, queueWait) + sizeof(ops.queueWait);
  if (ops.structSize < kMandatoryEnd || ops.structSize > sizeof(ops))
    fail(mtiaErrorInitializationError, "driver {} filled {} bytes of its ops table; expected {} to {}", source,
         ops.structSize, kMandatoryEnd, sizeof(ops));
  // Entries past an older driver's table are not its to fill.
  std::memset(reinterpret_cast<char*>(&ops) + ops.structSize, 0, sizeof(ops) - ops.structSize);
  for (const Entry& e : kMandatory)
    if (!present(ops, e)) fail(mtiaErrorInitializationError, "driver {} lacks the mandatory entry '{}'", source, e.name);
  if (!ops.lastErrorMessage) ops.lastErrorMessage = noMessage;
  if (!ops.clockNow) ops.clockNow = noClock;
  if (!ops.moduleLoad) ops.moduleLoad = noModuleLoad;
  if (!ops.moduleUnload) ops.moduleUnload = noModuleUnload;
  if (!ops.moduleGetKernel) ops.moduleGetKernel = noModuleGetKernel;
  if (!ops.kernelGetInfo) ops.kernelGetInfo = noKernelGetInfo;
  if (!ops.deviceSetPeerAccess) ops.deviceSetPeerAccess = noPeerAccess;
  if (!ops.isDriverThread) ops.isDriverThread = noDriverThreads;
  // queueGetCounts stays NULL when absent: the runtime then counts submissions itself
  // (Driver::countsQueues). So do the command list entries (Driver::supportsCommandLists), which
  // come as a pair.
  if ((ops.commandListCreate == nullptr) != (ops.commandListDestroy == nullptr))
    fail(mtiaErrorInitializationError, "driver {} sets '{}' but not '{}' (driver ABI 1.2: both or neither)", source,
         ops.commandListCreate ? "commandListCreate" : "commandListDestroy",
         ops.commandListCreate ? "commandListDestroy" : "commandListCreate");
  // The IPC entries (driver ABI 1.4) stay NULL when absent (Driver::supportsIpc); all or none.
  const void* ipc[] = {reinterpret_cast<const void*>(ops.ipcMemExport),   reinterpret_cast<const void*>(ops.ipcMemRevoke),
                       reinterpret_cast<const void*>(ops.ipcMemOpen),     reinterpret_cast<const void*>(ops.ipcMemClose),
                       reinterpret_cast<const void*>(ops.ipcEventExport), reinterpret_cast<const void*>(ops.ipcEventOpen),
                       reinterpret_cast<const void*>(ops.ipcEventClose),  reinterpret_cast<const void*>(ops.ipcEventRecord),
                       reinterpret_cast<const void*>(ops.ipcEventComplete), reinterpret_cast<const void*>(ops.ipcEventLatest),
                       reinterpret_cast<const void*>(ops.ipcEventWait)};
  size_t ipcSet = 0;
  for (const void* p : ipc) ipcSet += p != nullptr ? 1 : 0;
  if (ipcSet != 0 && ipcSet != std::size(ipc))
    fail(mtiaErrorInitializationError,
         "driver {} sets {} of the {} IPC entries (driver ABI 1.4: all or none)", source, ipcSet, std::size(ipc));
}

std::unique_ptr<Driver> loadDriver(const std::string& spec, std::span<const BuiltinDriver> builtins,
                                   const std::string& libraryDir) {
  mtiaDriverGetOpsFn getOps = nullptr;
  std::string source;
  for (const BuiltinDriver& b : builtins) {
    if (spec.empty() || spec == b.name) {
      getOps = b.getOps;
      source = fmt::format("built-in '{}'", b.name);
      break;
    }
  }
  if (getOps == nullptr) {
    if (spec.empty()) fail(mtiaErrorInitializationError, "no driver is built in and MTIA_DRIVER is not set");
    getOps = openDriver(spec, libraryDir, &source);
  }

  mtiaDriverOps ops{};
  ops.structSize = sizeof(ops);
  mtiaError_t st = getOps(MTIA_DRIVER_API_VERSION, &ops);
  if (st != mtiaSuccess)
    fail(mtiaErrorInitializationError, "driver {} refused driver ABI {}.{} ({})", source, MTIA_DRIVER_API_VERSION_MAJOR,
         MTIA_DRIVER_API_VERSION_MINOR, errorName(st));
  validateOps(ops, source);

  auto driver = std::make_unique<Driver>(ops, source);
  st = ops.init(0);
  if (st != mtiaSuccess) {
    const char* detail = ops.lastErrorMessage();
    fail(mtiaErrorInitializationError, "driver {} failed to initialise: {}", source,
         (detail && *detail) ? detail : errorName(st));
  }
  log(LogLevel::Info, "loaded driver '{}' from {}", driver->name(), source);
  return driver;
}

}  // namespace mtia::driver
