// Modules and functions: handles over the driver's modules and kernels, and
// the launch path. Built-in functions are looked up once and keep their
// handle for the life of the process.
#pragma once

#include "core/handle_table.hpp"
#include "platform/driver/driver.hpp"
#include "streams/stream.hpp"

#include <mtia/mtia_types.h>

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace mtia {

class Device;

struct Module;

struct Function {
    mtiaDrvKernel kernel = nullptr;
    std::string name;
    uint32_t numArgs = 0;
    std::array<uint32_t, MTIA_DRIVER_MAX_KERNEL_ARGS> argSizes{};
    // For the launch limits (mtiaDeviceProp.maxKernel*): the sum of argSizes, and the arguments
    // that could be device pointers (pointer-sized), whose values name the buffers a launch uses.
    uint64_t argBytes = 0;
    uint32_t pointerArgs = 0;
    // Keeps the driver module loaded while a launch holds the function, even
    // if the module's handle is unloaded meanwhile. Null for built-ins.
    std::shared_ptr<Module> module;
};

// A loaded module. The driver's module is unloaded when the last reference
// goes: the handle table's, and those of functions still being launched.
struct Module {
    Module(const driver::Driver& d, mtiaDrvModule m, std::string p)
        : driver(d), module(m), path(std::move(p)) {}
    ~Module();
    Module(const Module&) = delete;
    Module& operator=(const Module&) = delete;

    const driver::Driver& driver;
    const mtiaDrvModule module;
    const std::string path;
    std::map<std::string, uint64_t, std::less<>>
        functions;  // name -> handle; guarded by Kernels::mu_
};

class Kernels {
public:
    void attach(const driver::Driver* driver) noexcept { driver_ = driver; }

    // Thread-safe. Throws NotFound (cannot load), InvalidHandle, as documented in mtia_runtime.h.
    mtiaModule_t loadModule(const char* path);
    void unloadModule(mtiaModule_t module);
    mtiaFunction_t moduleFunction(mtiaModule_t module, const char* name);
    mtiaFunction_t builtinFunction(const char* name);
    // The function behind fn, without a reference count update: one borrowed function per thread at
    // a time (HandleTable::Ref). Throws InvalidHandle naming argName.
    HandleTable<Function>::Ref borrowFunction(mtiaFunction_t fn, const char* argName = "fn") const;
    // The function behind fn, held (for calls that run long or look up other functions meanwhile).
    // Throws InvalidHandle naming argName.
    std::shared_ptr<Function> function(mtiaFunction_t fn, const char* argName = "fn") const;

    // Queues the launch on stream, a stream of dev. The driver validates it; when it refuses, the
    // error names the ABI argument at fault (checked against dev's limits only then, off the common
    // path). The kernel limits (arguments, their bytes, distinct device buffers) are the runtime's
    // to check, for launches and captures alike: three comparisons unless the kernel has more
    // pointer-sized arguments than dev allows buffers.
    void launch(const Function& fn, const Device& dev, mtiaDim3 grid, mtiaDim3 block, void** args,
                size_t sharedMem, streams::Stream& stream) const;

private:
    mtiaFunction_t registerFunction(mtiaDrvKernel kernel, const std::string& name,
                                    std::shared_ptr<Module> module);

    const driver::Driver* driver_ = nullptr;
    mutable std::mutex mu_;
    HandleTable<Module> modules_{kTagModule};
    HandleTable<Function> functions_{kTagFunction};
    std::map<std::string, mtiaFunction_t, std::less<>> builtins_;
};

}  // namespace mtia
