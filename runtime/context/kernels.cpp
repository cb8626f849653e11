#include "runtime/context/kernels.hpp"

#include "core/error.hpp"
#include "core/log.hpp"
#include "runtime/context/device.hpp"
#include "runtime/context/memory_ops.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

namespace mtia {
namespace {

void checkDims(const char* what, mtiaDim3 d, const int32_t (&limit)[3]) {
    const uint32_t v[3] = {d.x, d.y, d.z};
    const char* axis[3] = {"x", "y", "z"};
    for (int i = 0; i < 3; ++i) {
        if (v[i] == 0)
            fail(mtiaErrorInvalidValue, "{}.{} is 0 (every dimension must be at least 1)", what,
                 axis[i]);
        if (limit[i] > 0 && v[i] > static_cast<uint32_t>(limit[i]))
            fail(mtiaErrorInvalidValue, "{}.{} is {}; the device allows at most {}", what, axis[i],
                 v[i], limit[i]);
    }
}

}  // namespace

Module::~Module() {
    if (driver.ops().moduleUnload(module) != mtiaSuccess)
        log(LogLevel::Error, "unloading module '{}' failed: {}", path, driver.message());
}

mtiaFunction_t Kernels::registerFunction(mtiaDrvKernel kernel, const std::string& name,
                                         std::shared_ptr<Module> module) {
    auto f = std::make_shared<Function>();
    f->kernel = kernel;
    f->name = name;
    f->module = std::move(module);
    driver_->check(driver_->ops().kernelGetInfo(kernel, &f->numArgs, f->argSizes.data()),
                   "reading kernel arguments");
    if (f->numArgs > MTIA_DRIVER_MAX_KERNEL_ARGS)
        fail(mtiaErrorDriver, "driver '{}' reports {} arguments for kernel '{}' (at most {})",
             driver_->name(), f->numArgs, name, MTIA_DRIVER_MAX_KERNEL_ARGS);
    for (uint32_t i = 0; i < f->numArgs; ++i) {
        f->argBytes += f->argSizes[i];
        if (f->argSizes[i] == sizeof(void*)) ++f->pointerArgs;
    }
    return toHandle<mtiaFunction_t>(functions_.insert(std::move(f)));
}

mtiaModule_t Kernels::loadModule(const char* path) {
    mtiaDrvModule raw = nullptr;
    mtiaError_t st = driver_->ops().moduleLoad(path, &raw);
    if (st == mtiaErrorNotFound || st == mtiaErrorInvalidValue)
        fail(mtiaErrorNotFound, "path '{}' cannot be loaded as a module: {}", path,
             driver_->message());
    driver_->check(st, "loading a module");
    auto m = std::make_shared<Module>(*driver_, raw, path);  // from here on, ~Module unloads it
    return toHandle<mtiaModule_t>(modules_.insert(std::move(m)));
}

void Kernels::unloadModule(mtiaModule_t module) {
    std::lock_guard lock(mu_);
    std::shared_ptr<Module> m = modules_.remove(fromHandle(module));
    if (!m)
        fail(mtiaErrorInvalidHandle,
             "module {} is not a loaded module (stale, unloaded or foreign)", fmt::ptr(module));
    for (const auto& [name, h] : m->functions) functions_.remove(h);
    // The driver module goes with the last reference: here, or when the last
    // launch that already holds one of its functions has queued its kernel.
}

mtiaFunction_t Kernels::moduleFunction(mtiaModule_t module, const char* name) {
    std::lock_guard lock(mu_);
    std::shared_ptr<Module> m = modules_.lookup(fromHandle(module));
    if (!m)
        fail(mtiaErrorInvalidHandle,
             "module {} is not a loaded module (stale, unloaded or foreign)", fmt::ptr(module));
    if (auto it = m->functions.find(name); it != m->functions.end())
        return toHandle<mtiaFunction_t>(it->second);
    mtiaDrvKernel k = nullptr;
    mtiaError_t st = driver_->ops().moduleGetKernel(m->module, name, &k);
    if (st == mtiaErrorNotFound)
        fail(st, "name '{}' is not a kernel of module '{}': {}", name, m->path, driver_->message());
    driver_->check(st, "looking up a kernel");
    mtiaFunction_t fn = registerFunction(k, name, m);
    try {
        m->functions.emplace(name, fromHandle(fn));
    } catch (...) {
        functions_.remove(fromHandle(fn));
        throw;
    }
    return fn;
}

mtiaFunction_t Kernels::builtinFunction(const char* name) {
    std::lock_guard lock(mu_);
    if (auto it = builtins_.find(name); it != builtins_.end()) return it->second;
    mtiaDrvKernel k = nullptr;
    mtiaError_t st = driver_->ops().moduleGetKernel(nullptr, name, &k);
    if (st == mtiaErrorNotFound) fail(st, "name '{}' is not a built-in kernel", name);
    driver_->check(st, "looking up a built-in kernel");
    mtiaFunction_t fn = registerFunction(k, name, nullptr);
    try {
        builtins_.emplace(name, fn);
    } catch (...) {
        functions_.remove(fromHandle(fn));
        throw;
    }
    return fn;
}

HandleTable<Function>::Ref Kernels::borrowFunction(mtiaFunction_t fn, const char* argName) const {
    if (fn == nullptr) fail(mtiaErrorInvalidHandle, "{} is NULL", argName);
    HandleTable<Function>::Ref f = functions_.borrow(fromHandle(fn));
    if (!f)
        fail(mtiaErrorInvalidHandle, "{} {} is not a live function (stale, unloaded or foreign)",
             argName, fmt::ptr(fn));
    return f;
}

std::shared_ptr<Function> Kernels::function(mtiaFunction_t fn, const char* argName) const {
    if (fn == nullptr) fail(mtiaErrorInvalidHandle, "{} is NULL", argName);
    std::shared_ptr<Function> f = functions_.lookup(fromHandle(fn));
    if (!f)
        fail(mtiaErrorInvalidHandle, "{} {} is not a live function (stale, unloaded or foreign)",
             argName, fmt::ptr(fn));
    return f;
}

namespace {

// What the driver checks too, in the ABI's terms: throws InvalidValue naming the argument at fault.
void validateLaunch(const Function& fn, const mtiaDrvDeviceInfo& limits, mtiaDim3 grid,
                    mtiaDim3 block, void** args, size_t sharedMem) {
    checkDims("grid", grid, limits.maxGridSize);
    checkDims("block", block, limits.maxThreadsDim);
    const uint64_t threads = uint64_t{block.x} * block.y * block.z;
    if (limits.maxThreadsPerBlock > 0 && threads > static_cast<uint64_t>(limits.maxThreadsPerBlock))
        fail(mtiaErrorInvalidValue, "block has {} threads; the device allows at most {} per block",
             threads, limits.maxThreadsPerBlock);
    if (sharedMem > limits.sharedMemPerBlock)
        fail(mtiaErrorInvalidValue, "sharedMem is {} bytes; the device allows at most {} per block",
             sharedMem, limits.sharedMemPerBlock);
    if (fn.numArgs > 0) {
        if (args == nullptr)
            fail(mtiaErrorInvalidValue, "args is NULL but kernel '{}' takes {} arguments", fn.name,
                 fn.numArgs);
        for (uint32_t i = 0; i < fn.numArgs; ++i)
            if (args[i] == nullptr)
                fail(mtiaErrorInvalidValue, "args[{}] is NULL (kernel '{}')", i, fn.name);
    }
}

// The distinct device allocations named by fn's pointer-sized arguments that lie in dev's address
// range (a pointer in no live allocation counts on its own: the device would fault on it).
// Pointers inside struct arguments are not seen: the limit counts top-level arguments.
uint32_t distinctBuffers(const Function& fn, const Device& dev, void** args) {
    if (args == nullptr) return 0;  // refused as a bad launch, not here
    std::vector<uintptr_t> bases;
    for (uint32_t i = 0; i < fn.numArgs; ++i) {
        if (fn.argSizes[i] != sizeof(void*) || args[i] == nullptr) continue;
        void* value = nullptr;
        std::memcpy(&value, args[i], sizeof value);
        if (!dev.ownsAddress(value)) continue;
        const std::optional<DevicePointer> d = findDevicePointer(Runtime::instance(), value);
        bases.push_back(d ? reinterpret_cast<uintptr_t>(d->allocation.base)
                          : reinterpret_cast<uintptr_t>(value));
    }
    std::sort(bases.begin(), bases.end());
    return static_cast<uint32_t>(std::unique(bases.begin(), bases.end()) - bases.begin());
}

// Off the common path: a limit may be exceeded. Throws InvalidValue naming the limit and the value.
[[gnu::cold, gnu::noinline]] void checkLimits(const Function& fn, const Device& dev, void** args) {
    const mtiaDrvDeviceInfo& lim = dev.info();
    if (fn.numArgs > static_cast<uint32_t>(lim.maxKernelArgs))
        fail(mtiaErrorInvalidValue,
             "kernel '{}' takes {} arguments; device {} allows {} (maxKernelArgs)", fn.name,
             fn.numArgs, dev.ordinal(), lim.maxKernelArgs);
    if (fn.argBytes > lim.maxKernelArgBytes)
        fail(mtiaErrorInvalidValue,
             "kernel '{}' takes {} bytes of arguments; device {} allows {} (maxKernelArgBytes)",
             fn.name, fn.argBytes, dev.ordinal(), lim.maxKernelArgBytes);
    if (const uint32_t n = distinctBuffers(fn, dev, args);
        n > static_cast<uint32_t>(lim.maxKernelBuffers))
        fail(mtiaErrorInvalidValue,
             "kernel '{}' is launched with {} distinct device buffers; device {} allows {} "
             "(maxKernelBuffers)",
             fn.name, n, dev.ordinal(), lim.maxKernelBuffers);
}

}  // namespace

void Kernels::launch(const Function& fn, const Device& dev, mtiaDim3 grid, mtiaDim3 block,
                     void** args, size_t sharedMem, streams::Stream& stream) const {
    const mtiaDrvDeviceInfo& lim = dev.info();
    if (fn.numArgs > static_cast<uint32_t>(lim.maxKernelArgs) ||
        fn.argBytes > lim.maxKernelArgBytes ||
        fn.pointerArgs > static_cast<uint32_t>(lim.maxKernelBuffers)) [[unlikely]]
        checkLimits(fn, dev, args);
    mtiaDrvCommand cmd{};
    cmd.type = mtiaDrvCmdKernel;
    cmd.u.kernel.kernel = fn.kernel;
    cmd.u.kernel.grid = grid;
    cmd.u.kernel.block = block;
    cmd.u.kernel.sharedMem = sharedMem;
    cmd.u.kernel.args = args;
    if (streams::CaptureLink* capture = stream.capture()) [[unlikely]] {
        // Recorded, not run: the driver sees the launch only at instantiate, so check it now.
        validateLaunch(fn, dev.info(), grid, block, args, sharedMem);
        streams::CapturedCommand c{cmd};
        c.numArgs = fn.numArgs;
        c.argSizes = fn.argSizes.data();
        c.name = fn.name.c_str();
        c.keepAlive = fn.module;
        capture->append(stream, c);
        return;
    }
    // A 1.1 driver validates launches itself; an older one may trust the runtime to have done it.
    const bool driverValidates = driver_->validatesLaunches();
    if (!driverValidates) validateLaunch(fn, dev.info(), grid, block, args, sharedMem);
    try {
        stream.submit(cmd);
    } catch (const Error& e) {
        // Off the common path: say what was refused in the terms of the ABI call.
        if (e.code() == mtiaErrorInvalidValue && driverValidates)
            validateLaunch(fn, dev.info(), grid, block, args, sharedMem);
        if (e.code() == mtiaErrorLaunchFailure || e.code() == mtiaErrorIllegalAddress)
            dev.checkHealthy();
        throw;
    }
}

}  // namespace mtia
