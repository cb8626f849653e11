#include "kernels.hpp"

namespace mtia_test {

mtiaFunction_t builtin(const char* name) {
    mtiaFunction_t fn = nullptr;
    if (mtiaGetBuiltinFunction(&fn, name) != mtiaSuccess) return nullptr;
    return fn;
}

mtiaFunction_t noopKernel() {
    static const mtiaFunction_t fn = builtin("noop");
    return fn;
}

mtiaError_t launchNoop(mtiaStream_t s) {
    return mtiaLaunchKernel(noopKernel(), kOne, kOne, nullptr, 0, s);
}

mtiaError_t launchSleep(mtiaStream_t s, uint64_t us) {
    static const mtiaFunction_t fn = builtin("sleep_us");
    void* args[] = {&us};
    return mtiaLaunchKernel(fn, kOne, kOne, args, 0, s);
}

mtiaError_t launchFill(mtiaStream_t s, float* dst, float value, uint64_t n) {
    static const mtiaFunction_t fn = builtin("fill_f32");
    void* args[] = {&dst, &value, &n};
    return mtiaLaunchKernel(fn, kOne, kOne, args, 0, s);
}

mtiaError_t launchCopy(mtiaStream_t s, float* dst, const float* src, uint64_t n) {
    static const mtiaFunction_t fn = builtin("copy_f32");
    void* args[] = {&dst, &src, &n};
    return mtiaLaunchKernel(fn, kOne, kOne, args, 0, s);
}

mtiaError_t launchScale(mtiaStream_t s, float* out, const float* a, float k, uint64_t n) {
    static const mtiaFunction_t fn = builtin("scale_f32");
    void* args[] = {&out, &a, &k, &n};
    return mtiaLaunchKernel(fn, kOne, kOne, args, 0, s);
}

}  // namespace mtia_test
