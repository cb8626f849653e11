// Entries about modules and kernels.
#include "ops_common.hpp"

#include <memory>
#include <string>
#include <vector>

namespace mtia::sim::ops {
namespace {

std::string builtinNames() {
    std::string names;
    for (const Kernel& kernel : builtinKernels())
        names += (names.empty() ? "" : ", ") + kernel.name;
    return names;
}

}  // namespace

// Thread-safe; blocks in dlopen. Errors: mtiaErrorInvalidValue (NULL), mtiaErrorNotFound (cannot
// load).
mtiaError_t moduleLoad(const char* path, mtiaDrvModule* module) {
    return guarded("moduleLoad", [&] {
        Machine* machine = nullptr;
        if (mtiaError_t err = machineFor("moduleLoad", machine); err != mtiaSuccess) return err;
        if (path == nullptr || module == nullptr)
            return nullArgument("moduleLoad", "path and module");
        std::shared_ptr<Module> loaded;
        if (mtiaError_t err = Module::load(path, loaded); err != mtiaSuccess) return err;
        Handles& handles = machine->handles();
        std::unique_lock lock(handles.mu);
        const Module* raw = loaded.get();
        handles.modules.emplace(raw, std::move(loaded));
        *module = reinterpret_cast<mtiaDrvModule>(const_cast<Module*>(raw));
        return mtiaSuccess;
    });
}

// Thread-safe, returns at once; the shared object is closed when the last submitted kernel of the
// module completed. Its kernel handles become invalid. Errors: mtiaErrorInvalidHandle (NULL = the
// built-in module, or not a loaded module).
mtiaError_t moduleUnload(mtiaDrvModule module) {
    return guarded("moduleUnload", [&] {
        Machine* machine = nullptr;
        if (mtiaError_t err = machineFor("moduleUnload", machine); err != mtiaSuccess) return err;
        Handles& handles = machine->handles();
        std::vector<std::shared_ptr<Module>>
            dropped;  // destroyed (maybe dlclose()d) after the lock
        std::unique_lock lock(handles.mu);
        auto it = handles.modules.find(reinterpret_cast<const Module*>(module));
        if (it == handles.modules.end()) {
            return reportErrorf(mtiaErrorInvalidHandle, "moduleUnload: {} is not a loaded module",
                                static_cast<void*>(module));
        }
        dropped.push_back(std::move(it->second));
        handles.modules.erase(it);
        std::erase_if(handles.kernels, [&](auto& entry) {
            if (entry.second.get() != dropped.front().get()) return false;
            dropped.push_back(std::move(entry.second));
            return true;
        });
        lock.unlock();
        return mtiaSuccess;
    });
}

// Thread-safe; the first lookup of a module kernel calls dlsym. Errors: mtiaErrorInvalidValue (NULL
// name or kernel, malformed argument descriptor), mtiaErrorInvalidHandle (module not loaded),
// mtiaErrorNotFound (no such kernel, or it lacks its NAME_mtia_args descriptor).
mtiaError_t moduleGetKernel(mtiaDrvModule module, const char* name, mtiaDrvKernel* kernel) {
    return guarded("moduleGetKernel", [&] {
        Machine* machine = nullptr;
        if (mtiaError_t err = machineFor("moduleGetKernel", machine); err != mtiaSuccess)
            return err;
        if (name == nullptr || kernel == nullptr)
            return nullArgument("moduleGetKernel", "name and kernel");
        if (module == nullptr) {
            const Kernel* found = findBuiltinKernel(name);
            if (found == nullptr) {
                return reportErrorf(mtiaErrorNotFound,
                                    "moduleGetKernel: no built-in kernel '{}' (built-ins: {})",
                                    name, builtinNames());
            }
            *kernel = reinterpret_cast<mtiaDrvKernel>(const_cast<Kernel*>(found));
            return mtiaSuccess;
        }
        Handles& handles = machine->handles();
        std::shared_ptr<Module> owner;
        {
            std::shared_lock lock(handles.mu);
            auto it = handles.modules.find(reinterpret_cast<const Module*>(module));
            if (it == handles.modules.end()) {
                return reportErrorf(mtiaErrorInvalidHandle,
                                    "moduleGetKernel: {} is not a loaded module",
                                    static_cast<void*>(module));
            }
            owner = it->second;
        }
        Kernel* found = nullptr;
        if (mtiaError_t err = owner->getKernel(name, &found); err != mtiaSuccess) return err;
        std::unique_lock lock(handles.mu);
        if (handles.modules.find(owner.get()) == handles.modules.end()) {
            return reportErrorf(mtiaErrorInvalidHandle,
                                "moduleGetKernel: module {} was unloaded meanwhile",
                                static_cast<void*>(module));
        }
        handles.kernels.emplace(found, std::move(owner));
        *kernel = reinterpret_cast<mtiaDrvKernel>(found);
        return mtiaSuccess;
    });
}

// Thread-safe, never blocks. Writes all MTIA_DRIVER_MAX_KERNEL_ARGS entries of argSizes (0 past
// numArgs). Errors: mtiaErrorInvalidValue (NULL outputs), mtiaErrorInvalidHandle.
mtiaError_t kernelGetInfo(mtiaDrvKernel kernel, uint32_t* numArgs, uint32_t* argSizes) {
    return guarded("kernelGetInfo", [&] {
        Machine* machine = nullptr;
        if (mtiaError_t err = machineFor("kernelGetInfo", machine); err != mtiaSuccess) return err;
        if (numArgs == nullptr || argSizes == nullptr)
            return nullArgument("kernelGetInfo", "numArgs and argSizes");
        const auto* k = reinterpret_cast<const Kernel*>(kernel);
        std::shared_lock lock(
            machine->handles().mu);  // a module kernel stays valid while we read it
        if (!isBuiltinKernel(k) && machine->handles().kernels.count(k) == 0) {
            return reportErrorf(mtiaErrorInvalidHandle, "kernelGetInfo: {} is not a kernel",
                                static_cast<void*>(kernel));
        }
        *numArgs = k->numArgs;
        for (uint32_t i = 0; i < MTIA_DRIVER_MAX_KERNEL_ARGS; ++i)
            argSizes[i] = i < k->numArgs ? k->sizes[i] : 0;
        return mtiaSuccess;
    });
}

}  // namespace mtia::sim::ops
