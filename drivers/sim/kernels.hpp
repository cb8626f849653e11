// Kernels and the modules that hold them. A kernel is a host function with the
// mtia_sim_kernel.h signature plus the sizes of its arguments, which tell
// queueSubmit how many bytes of each argument to copy.
#pragma once

#include <mtia/mtia_sim_kernel.h>
#include <mtia/mtia_types.h>

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

namespace mtia::sim {

// Bytes of argument values one launch may carry (like CUDA's parameter limit).
inline constexpr uint32_t kMaxArgumentBytes = 4096;

class Module;

// The object behind an mtiaDrvKernel handle. Immutable once created.
struct Kernel {
    std::string name;
    mtiaSimKernelFn fn = nullptr;
    uint32_t numArgs = 0;
    uint32_t argBytes = 0;  // size of the packed copy of all arguments
    std::array<uint32_t, MTIA_SIM_MAX_KERNEL_ARGS> sizes{};
    std::array<uint32_t, MTIA_SIM_MAX_KERNEL_ARGS>
        offsets{};             // of each argument in the packed copy
    Module* module = nullptr;  // nullptr for built-in kernels
};

// Fills numArgs, sizes, offsets and argBytes from a descriptor. Each argument is aligned to its
// size rounded up to a power of two (at most 16), so kernels may dereference args[i] as their type.
// Returns false with error when the descriptor is malformed.
bool layoutArguments(const mtiaSimKernelArgs& desc, Kernel& kernel, std::string& error);

// The built-in module (ABI.md's table). They live for the process.
std::span<const Kernel> builtinKernels();
const Kernel* findBuiltinKernel(std::string_view name);
bool isBuiltinKernel(const void* kernel);

// A dlopen()ed shared object of kernels. Destroying it dlclose()s it, which is why commands of its
// kernels hold a reference until they completed. Thread-safe.
class Module {
public:
    // Errors: mtiaErrorNotFound (dlopen failed; the message carries dlerror()).
    static mtiaError_t load(const char* path, std::shared_ptr<Module>& module);
    ~Module();
    Module(const Module&) = delete;
    Module& operator=(const Module&) = delete;

    // Finds (once) kernel name and its NAME_mtia_args descriptor. Errors: mtiaErrorNotFound (either
    // symbol missing), mtiaErrorInvalidValue (malformed descriptor).
    mtiaError_t getKernel(const char* name, Kernel** kernel);
    const std::string& path() const { return path_; }

private:
    Module(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}

    void* handle_;
    std::string path_;
    std::mutex mu_;
    std::unordered_map<std::string, std::unique_ptr<Kernel>> kernels_;
};

}  // namespace mtia::sim
