#include "runtime/kernels.hpp"

#include "runtime/core/error.hpp"

namespace mtia {
namespace {

template <typename H>
H toHandle(uint64_t v) {
  return reinterpret_cast<H>(static_cast<uintptr_t>(v));
}
template <typename H>
uint64_t fromHandle(H h) {
  return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(h));
}

void checkDims(const char* what, mtiaDim3 d, const int32_t (&limit)[3]) {
  const uint32_t v[3] = {d.x, d.y, d.z};
  const char* axis[3] = {"x", "y", "z"};
  for (int i = 0; i < 3; ++i) {
    if (v[i] == 0) fail(mtiaErrorInvalidValue, "{}.{} is 0 (every dimension must be at least 1)", what, axis[i]);
    if (limit[i] > 0 && v[i] > static_cast<uint32_t>(limit[i]))
      fail(mtiaErrorInvalidValue, "{}.{} is {}; the device allows at most {}", what, axis[i], v[i], limit[i]);
  }
}

}  // namespace

mtiaFunction_t Kernels::registerFunction(mtiaDrvKernel kernel, const std::string& name) {
  auto f = std::make_shared<Function>();
  f->kernel = kernel;
  f->name = name;
  driver_->check(driver_->ops().kernelGetInfo(kernel, &f->numArgs, f->argSizes.data()), "reading kernel arguments");
  return toHandle<mtiaFunction_t>(functions_.insert(std::move(f)));
}

mtiaModule_t Kernels::loadModule(const char* path) {
  auto m = std::make_shared<Module>();
  m->path = path;
  mtiaError_t st = driver_->ops().moduleLoad(path, &m->module);
  if (st == mtiaErrorNotFound || st == mtiaErrorInvalidValue)
    fail(mtiaErrorNotFound, "path '{}' cannot be loaded as a module: {}", path, driver_->ops().lastErrorMessage());
  driver_->check(st, "loading a module");
  return toHandle<mtiaModule_t>(modules_.insert(std::move(m)));
}

void Kernels::unloadModule(mtiaModule_t module) {
  std::shared_ptr<Module> m;
  {
    std::lock_guard lock(mu_);
    m = modules_.remove(fromHandle(module));
    if (!m) fail(mtiaErrorInvalidHandle, "module {} is not a loaded module (stale, unloaded or foreign)", fmt::ptr(module));
    for (uint64_t h : m->functionHandles) functions_.remove(h);
  }
  driver_->check(driver_->ops().moduleUnload(m->module), "unloading a module");
}

mtiaFunction_t Kernels::moduleFunction(mtiaModule_t module, const char* name) {
  std::lock_guard lock(mu_);
  std::shared_ptr<Module> m = modules_.lookup(fromHandle(module));
  if (!m) fail(mtiaErrorInvalidHandle, "module {} is not a loaded module (stale, unloaded or foreign)", fmt::ptr(module));
  mtiaDrvKernel k = nullptr;
  mtiaError_t st = driver_->ops().moduleGetKernel(m->module, name, &k);
  if (st == mtiaErrorNotFound)
    fail(st, "name '{}' is not a kernel of module '{}': {}", name, m->path, driver_->ops().lastErrorMessage());
  driver_->check(st, "looking up a kernel");
  mtiaFunction_t fn = registerFunction(k, name);
  m->functionHandles.push_back(fromHandle(fn));
  return fn;
}

mtiaFunction_t Kernels::builtinFunction(const char* name) {
  std::lock_guard lock(mu_);
  if (auto it = builtins_.find(name); it != builtins_.end()) return it->second;
  mtiaDrvKernel k = nullptr;
  mtiaError_t st = driver_->ops().moduleGetKernel(nullptr, name, &k);
  if (st == mtiaErrorNotFound) fail(st, "name '{}' is not a built-in kernel", name);
  driver_->check(st, "looking up a built-in kernel");
  mtiaFunction_t fn = registerFunction(k, name);
  builtins_.emplace(name, fn);
  return fn;
}

std::shared_ptr<Function> Kernels::function(mtiaFunction_t fn, const char* argName) const {
  if (fn == nullptr) fail(mtiaErrorInvalidHandle, "{} is NULL", argName);
  std::shared_ptr<Function> f = functions_.lookup(fromHandle(fn));
  if (!f) fail(mtiaErrorInvalidHandle, "{} {} is not a live function (stale, unloaded or foreign)", argName, fmt::ptr(fn));
  return f;
}

void Kernels::launch(const Function& fn, const mtiaDrvDeviceInfo& limits, mtiaDim3 grid, mtiaDim3 block, void** args,
                     size_t sharedMem, streams::Stream& stream) const {
  checkDims("grid", grid, limits.maxGridSize);
  checkDims("block", block, limits.maxThreadsDim);
  const uint64_t threads = uint64_t{block.x} * block.y * block.z;
  if (limits.maxThreadsPerBlock > 0 && threads > static_cast<uint64_t>(limits.maxThreadsPerBlock))
    fail(mtiaErrorInvalidValue, "block has {} threads; the device allows at most {} per block", threads,
         limits.maxThreadsPerBlock);
  if (sharedMem > limits.sharedMemPerBlock)
    fail(mtiaErrorInvalidValue, "sharedMem is {} bytes; the device allows at most {} per block", sharedMem,
         limits.sharedMemPerBlock);
  if (fn.numArgs > 0) {
    if (args == nullptr) fail(mtiaErrorInvalidValue, "args is NULL but kernel '{}' takes {} arguments", fn.name, fn.numArgs);
    for (uint32_t i = 0; i < fn.numArgs; ++i)
      if (args[i] == nullptr) fail(mtiaErrorInvalidValue, "args[{}] is NULL (kernel '{}')", i, fn.name);
  }
  mtiaDrvCommand cmd{};
  cmd.type = mtiaDrvCmdKernel;
  cmd.u.kernel.kernel = fn.kernel;
  cmd.u.kernel.grid = grid;
  cmd.u.kernel.block = block;
  cmd.u.kernel.sharedMem = sharedMem;
  cmd.u.kernel.args = args;
  stream.submit(cmd);
}

}  // namespace mtia
