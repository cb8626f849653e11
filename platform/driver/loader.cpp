#include "platform/driver/loader.hpp"

#include "core/error.hpp"
#include "core/log.hpp"

#include <dlfcn.h>

#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <vector>

namespace mtia::driver {
namespace {

// Stand-ins for the 1.0 optional entries a driver leaves out (Note [optional entries]).
const char* noMessage() {
    return "";
}
mtiaError_t noClock(uint64_t*) {
    return mtiaErrorNotSupported;
}
mtiaError_t noModuleLoad(const char*, mtiaDrvModule*) {
    return mtiaErrorNotSupported;
}
mtiaError_t noModuleUnload(mtiaDrvModule) {
    return mtiaErrorNotSupported;
}
mtiaError_t noModuleGetKernel(mtiaDrvModule, const char*, mtiaDrvKernel*) {
    return mtiaErrorNotSupported;
}
mtiaError_t noKernelGetInfo(mtiaDrvKernel, uint32_t*, uint32_t*) {
    return mtiaErrorNotSupported;
}
mtiaError_t noPeerAccess(int32_t, int32_t, int32_t) {
    return mtiaErrorNotSupported;
}
int32_t noDriverThreads() {
    return 0;
}

struct Entry {
    const char* name;
    size_t offset;
};

#define MTIA_OPS_ENTRY(field)                                                                      \
    Entry {                                                                                        \
#field, offsetof(mtiaDriverOps, field)                                                     \
    }
constexpr Entry kMandatory[] = {
    MTIA_OPS_ENTRY(init),
    MTIA_OPS_ENTRY(getName),
    MTIA_OPS_ENTRY(deviceGetCount),
    MTIA_OPS_ENTRY(deviceGetInfo),
    MTIA_OPS_ENTRY(deviceGetStatus),
    MTIA_OPS_ENTRY(deviceSynchronize),
    MTIA_OPS_ENTRY(memGetInfo),
    MTIA_OPS_ENTRY(vaReserve),
    MTIA_OPS_ENTRY(vaRelease),
    MTIA_OPS_ENTRY(memCreate),
    MTIA_OPS_ENTRY(memRelease),
    MTIA_OPS_ENTRY(memMap),
    MTIA_OPS_ENTRY(memUnmap),
    MTIA_OPS_ENTRY(queueCreate),
    MTIA_OPS_ENTRY(queueDestroy),
    MTIA_OPS_ENTRY(queueSubmit),
    MTIA_OPS_ENTRY(queueQuery),
    MTIA_OPS_ENTRY(queueWait),
};

// Note [optional entries]: every optional entry belongs to exactly one block, and one rule decides
// each block (mtia_driver.h says it to driver authors): present when the driver's minor version is
// at least the block's, its table reaches the block's end and every entry is set; refused at load
// when only some are set; otherwise absent, and cleared (what lies past the filled table or in a
// block newer than the driver's version is not the driver's to fill). Absent 1.0 entries get the
// stand-ins above, because the runtime calls them without asking; later blocks stay NULL and Driver
// says whether they are there (countsQueues, supportsCommandLists, supportsIpc, describesMachines,
// ...).
struct Block {
    uint32_t minor;  // the driver ABI minor version that added it
    std::initializer_list<Entry> entries;
};
constexpr Block kOptional[] = {
    {0, {MTIA_OPS_ENTRY(lastErrorMessage)}},
    {0, {MTIA_OPS_ENTRY(clockNow)}},
    {0, {MTIA_OPS_ENTRY(moduleLoad)}},
    {0, {MTIA_OPS_ENTRY(moduleUnload)}},
    {0, {MTIA_OPS_ENTRY(moduleGetKernel)}},
    {0, {MTIA_OPS_ENTRY(kernelGetInfo)}},
    {0, {MTIA_OPS_ENTRY(deviceSetPeerAccess)}},
    {0, {MTIA_OPS_ENTRY(isDriverThread)}},
    {1, {MTIA_OPS_ENTRY(queueGetCounts)}},
    {2, {MTIA_OPS_ENTRY(commandListCreate), MTIA_OPS_ENTRY(commandListDestroy)}},
    {3, {MTIA_OPS_ENTRY(memReportAllocated)}},
    {4,
     {MTIA_OPS_ENTRY(ipcMemExport), MTIA_OPS_ENTRY(ipcMemRevoke), MTIA_OPS_ENTRY(ipcMemOpen),
      MTIA_OPS_ENTRY(ipcMemClose), MTIA_OPS_ENTRY(ipcEventExport), MTIA_OPS_ENTRY(ipcEventOpen),
      MTIA_OPS_ENTRY(ipcEventClose), MTIA_OPS_ENTRY(ipcEventRecord),
      MTIA_OPS_ENTRY(ipcEventComplete), MTIA_OPS_ENTRY(ipcEventLatest),
      MTIA_OPS_ENTRY(ipcEventWait)}},
    {5, {MTIA_OPS_ENTRY(ipcMemSize)}},
    {6, {MTIA_OPS_ENTRY(machineGetSpec), MTIA_OPS_ENTRY(machineDescribeDevice)}},
    {7, {MTIA_OPS_ENTRY(deviceGetFaultWord), MTIA_OPS_ENTRY(memGetAllocatedWords)}},
    {8, {MTIA_OPS_ENTRY(deviceReset)}},
};
#undef MTIA_OPS_ENTRY
constexpr size_t kMandatoryEnd = offsetof(mtiaDriverOps, queueWait) + sizeof(void*);

// The blocks cover the optional entries in order, each exactly once, up to the table's end.
constexpr bool blocksCoverTheTable() {
    size_t next = kMandatoryEnd;
    uint32_t minor = 0;
    for (const Block& block : kOptional) {
        if (block.minor < minor || block.entries.size() == 0) return false;
        minor = block.minor;
        for (const Entry& e : block.entries) {
            if (e.offset != next) return false;
            next += sizeof(void*);
        }
    }
    return next == sizeof(mtiaDriverOps) && minor == MTIA_DRIVER_API_VERSION_MINOR;
}
static_assert(blocksCoverTheTable(),
              "every optional entry of mtiaDriverOps belongs to one block of kOptional");

bool present(const mtiaDriverOps& ops, const Entry& e) {
    void* p = nullptr;
    std::memcpy(&p, reinterpret_cast<const char*>(&ops) + e.offset, sizeof(p));
    return p != nullptr;
}

void clear(mtiaDriverOps& ops, const Entry& e) {
    std::memset(reinterpret_cast<char*>(&ops) + e.offset, 0, sizeof(void*));
}

// Note [optional entries].
void settleBlock(mtiaDriverOps& ops, const Block& block, const std::string& source) {
    const size_t end = (block.entries.end() - 1)->offset + sizeof(void*);
    if (MTIA_DRIVER_API_MINOR(ops.version) < block.minor || ops.structSize < end) {
        for (const Entry& e : block.entries) clear(ops, e);
        return;
    }
    const Entry* set = nullptr;
    const Entry* missing = nullptr;
    for (const Entry& e : block.entries) {
        if (present(ops, e)) {
            if (set == nullptr) set = &e;
        } else if (missing == nullptr) {
            missing = &e;
        }
    }
    if (set != nullptr && missing != nullptr)
        fail(mtiaErrorInitializationError,
             "driver {} sets '{}' but lacks '{}': the {} entries of driver ABI 1.{} from '{}' come "
             "all or none",
             source, set->name, missing->name, block.entries.size(), block.minor,
             block.entries.begin()->name);
}

std::string libraryFolder(const std::string& libraryDir) {
    return libraryDir.empty() ? "" : libraryDir + "/mtia/";
}

mtiaDriverGetOpsFn openLibrary(const std::string& spec, const std::string& libraryDir,
                               std::string* source) {
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
            fail(mtiaErrorInitializationError, "MTIA_DRIVER='{}': {} does not export {}", spec,
                 path, MTIA_DRIVER_GET_OPS_SYMBOL);
        *source = path;
        mtiaDriverGetOpsFn fn;
        std::memcpy(&fn, &sym, sizeof(fn));
        return fn;
    }
    fail(mtiaErrorInitializationError,
         "MTIA_DRIVER='{}': cannot load the driver ({}); expected a built-in driver name (sim), a "
         "driver name N with "
         "mtia_driver_N.so on the library path, or a path to a driver shared object",
         spec, errors);
}

}  // namespace

void validateOps(mtiaDriverOps& ops, const std::string& source) {
    const uint32_t major = MTIA_DRIVER_API_MAJOR(ops.version);
    if (major != MTIA_DRIVER_API_VERSION_MAJOR)
        fail(mtiaErrorInitializationError,
             "driver {} implements driver ABI {}.{}; this runtime needs {}.x", source, major,
             MTIA_DRIVER_API_MINOR(ops.version), MTIA_DRIVER_API_VERSION_MAJOR);
    if (ops.structSize < kMandatoryEnd || ops.structSize > sizeof(ops))
        fail(mtiaErrorInitializationError,
             "driver {} filled {} bytes of its ops table; expected {} to {}", source,
             ops.structSize, kMandatoryEnd, sizeof(ops));
    // Entries past an older driver's table are not its to fill.
    std::memset(reinterpret_cast<char*>(&ops) + ops.structSize, 0, sizeof(ops) - ops.structSize);
    for (const Entry& e : kMandatory)
        if (!present(ops, e))
            fail(mtiaErrorInitializationError, "driver {} lacks the mandatory entry '{}'", source,
                 e.name);
    for (const Block& block : kOptional) settleBlock(ops, block, source);
    if (!ops.lastErrorMessage) ops.lastErrorMessage = noMessage;
    if (!ops.clockNow) ops.clockNow = noClock;
    if (!ops.moduleLoad) ops.moduleLoad = noModuleLoad;
    if (!ops.moduleUnload) ops.moduleUnload = noModuleUnload;
    if (!ops.moduleGetKernel) ops.moduleGetKernel = noModuleGetKernel;
    if (!ops.kernelGetInfo) ops.kernelGetInfo = noKernelGetInfo;
    if (!ops.deviceSetPeerAccess) ops.deviceSetPeerAccess = noPeerAccess;
    if (!ops.isDriverThread) ops.isDriverThread = noDriverThreads;
}

std::string thisLibraryDir() {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&thisLibraryDir), &info) == 0 || info.dli_fname == nullptr)
        return {};
    std::string path = info.dli_fname;
    const auto slash = path.rfind('/');
    return slash == std::string::npos ? std::string{} : path.substr(0, slash);
}

std::unique_ptr<Driver> openDriver(const std::string& spec, std::span<const BuiltinDriver> builtins,
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
        if (spec.empty())
            fail(mtiaErrorInitializationError, "no driver is built in and MTIA_DRIVER is not set");
        getOps = openLibrary(spec, libraryDir, &source);
    }

    mtiaDriverOps ops{};
    ops.structSize = sizeof(ops);
    const mtiaError_t st = getOps(MTIA_DRIVER_API_VERSION, &ops);
    if (st != mtiaSuccess)
        fail(mtiaErrorInitializationError, "driver {} refused driver ABI {}.{} ({})", source,
             MTIA_DRIVER_API_VERSION_MAJOR, MTIA_DRIVER_API_VERSION_MINOR, errorName(st));
    validateOps(ops, source);
    return std::make_unique<Driver>(ops, source);
}

std::unique_ptr<Driver> loadDriver(const std::string& spec, std::span<const BuiltinDriver> builtins,
                                   const std::string& libraryDir) {
    std::unique_ptr<Driver> driver = openDriver(spec, builtins, libraryDir);
    const mtiaError_t st = driver->ops().init(0);
    if (st != mtiaSuccess) {
        const char* detail = driver->ops().lastErrorMessage();
        fail(mtiaErrorInitializationError, "driver {} failed to initialise: {}", driver->source(),
             (detail && *detail) ? detail : errorName(st));
    }
    log(LogLevel::Info, "loaded driver '{}' from {}", driver->name(), driver->source());
    return driver;
}

}  // namespace mtia::driver
