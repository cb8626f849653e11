#include "kernels.hpp"

#include "error.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <bit>
#include <cstddef>

namespace mtia::sim {

bool layoutArguments(const mtiaSimKernelArgs& desc, Kernel& kernel, std::string& error) {
    if (desc.count > MTIA_SIM_MAX_KERNEL_ARGS) {
        error = fmt::format("declares {} arguments, more than the {} allowed", desc.count,
                            MTIA_SIM_MAX_KERNEL_ARGS);
        return false;
    }
    // Descriptors are sized like the struct they were built from; the sizes that struct held must
    // be there.
    const size_t needed = offsetof(mtiaSimKernelArgs, sizes) + sizeof(uint32_t) * desc.count;
    if (desc.structSize < needed) {
        error = fmt::format("descriptor structSize {} is too small for {} arguments",
                            desc.structSize, desc.count);
        return false;
    }
    uint64_t offset = 0;
    for (uint32_t i = 0; i < desc.count; ++i) {
        const uint32_t size = desc.sizes[i];
        if (size == 0) {
            error = fmt::format("argument {} has size 0", i);
            return false;
        }
        const uint64_t align = std::min<uint64_t>(16, std::bit_ceil(static_cast<uint64_t>(size)));
        offset = (offset + align - 1) / align * align;
        kernel.sizes[i] = size;
        kernel.offsets[i] = static_cast<uint32_t>(offset);
        offset += size;
        if (offset > kMaxArgumentBytes) {
            error = fmt::format("arguments take more than {} bytes", kMaxArgumentBytes);
            return false;
        }
    }
    kernel.numArgs = desc.count;
    kernel.argBytes = static_cast<uint32_t>(offset);
    return true;
}

const Kernel* findBuiltinKernel(std::string_view name) {
    for (const Kernel& kernel : builtinKernels()) {
        if (kernel.name == name) return &kernel;
    }
    return nullptr;
}

bool isBuiltinKernel(const void* kernel) {
    static const std::span<const Kernel> all =
        builtinKernels();  // one guard check instead of a call
    // Compare as integers: relational operators on unrelated pointers are unspecified.
    const auto p = reinterpret_cast<uintptr_t>(kernel);
    const auto begin = reinterpret_cast<uintptr_t>(all.data());
    const auto end = reinterpret_cast<uintptr_t>(all.data() + all.size());
    return p >= begin && p < end && (p - begin) % sizeof(Kernel) == 0;
}

mtiaError_t Module::load(const char* path, std::shared_ptr<Module>& module) {
    dlerror();
    void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
        const char* why = dlerror();
        return reportErrorf(mtiaErrorNotFound, "moduleLoad: cannot load '{}': {}", path,
                            why ? why : "unknown error");
    }
    module.reset(new Module(handle, path));
    return mtiaSuccess;
}

Module::~Module() {
    dlclose(handle_);
}

mtiaError_t Module::getKernel(const char* name, Kernel** kernel) {
    std::lock_guard lock(mu_);
    if (auto it = kernels_.find(name); it != kernels_.end()) {
        *kernel = it->second.get();
        return mtiaSuccess;
    }
    dlerror();
    void* fn = dlsym(handle_, name);
    if (fn == nullptr) {
        return reportErrorf(mtiaErrorNotFound, "moduleGetKernel: module '{}' has no kernel '{}'",
                            path_, name);
    }
    const std::string argsName = std::string(name) + MTIA_SIM_KERNEL_ARGS_SUFFIX;
    const auto* desc = static_cast<const mtiaSimKernelArgs*>(dlsym(handle_, argsName.c_str()));
    if (desc == nullptr) {
        return reportErrorf(
            mtiaErrorNotFound,
            "moduleGetKernel: module '{}' has kernel '{}' but not its argument descriptor '{}' "
            "(declare it with MTIA_SIM_KERNEL_ARGS)",
            path_, name, argsName);
    }
    auto created = std::make_unique<Kernel>();
    std::string error;
    if (!layoutArguments(*desc, *created, error)) {
        return reportErrorf(mtiaErrorInvalidValue,
                            "moduleGetKernel: kernel '{}' of module '{}': {}", name, path_, error);
    }
    created->name = name;
    created->fn = reinterpret_cast<mtiaSimKernelFn>(fn);
    created->module = this;
    *kernel = created.get();
    kernels_.emplace(name, std::move(created));
    return mtiaSuccess;
}

}  // namespace mtia::sim
