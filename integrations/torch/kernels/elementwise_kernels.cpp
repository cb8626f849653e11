// The kernel module of the PyTorch integration: one strided elementwise kernel for every dtype the
// integration supports (copies with type conversion, fill, linear combinations, products, relu and
// sums over dimensions). It is loaded with mtiaModuleLoad and runs on the simulated device, where
// device memory is host-addressable; it never calls the runtime.
#include "dtype_access.h"

namespace {

using namespace mtia_kernels;

bool paramFault(const mtiaKernelContext* ctx, const char* what, const char* name) {
    char message[200];
    std::snprintf(message, sizeof message, "%s %s", name, what);
    return mtia_kernels::fault(ctx, "mtia_torch_elementwise", message);
}

// Faults unless every element tensor t addresses over the index space is device memory.
bool checkTensor(const mtiaKernelContext* ctx, const mtiaTorchElementwise& p,
                 const mtiaTorchTensorArg& t, const char* name) {
    return checkRange(ctx, "mtia_torch_elementwise", name, t.data, t.dtype, p.ndim, p.sizes,
                      t.strides);
}

int64_t offsetOf(const mtiaTorchElementwise& p, const mtiaTorchTensorArg& t, uint64_t linear) {
    int64_t offset = 0;
    for (int d = p.ndim - 1; d >= 0; --d) {
        const auto size = static_cast<uint64_t>(p.sizes[d]);
        offset += static_cast<int64_t>(linear % size) * t.strides[d];
        linear /= size;
    }
    return offset;
}

char* at(const mtiaTorchTensorArg& t, int64_t offset) {
    return reinterpret_cast<char*>(t.data) + offset * elementSize(t.dtype);
}

// Integer arithmetic wraps around, as PyTorch's does on the CPU (and without undefined behaviour).
int64_t wrapAdd(int64_t a, int64_t b) {
    return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t wrapMul(int64_t a, int64_t b) {
    return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

bool usesA(int32_t op) {
    return op != mtiaTorchOpFill;
}
bool usesB(int32_t op) {
    return op == mtiaTorchOpLinComb || op == mtiaTorchOpMul || op == mtiaTorchOpThresholdBackward;
}

void apply(const mtiaTorchElementwise& p, uint64_t i) {
    char* out = at(p.out, offsetOf(p, p.out, i));
    const char* a = usesA(p.op) ? at(p.a, offsetOf(p, p.a, i)) : nullptr;
    const char* b = usesB(p.op) ? at(p.b, offsetOf(p, p.b, i)) : nullptr;
    if (isFloating(p.out.dtype) || p.out.dtype == mtiaTorchBool) {
        double v = 0.0;
        switch (p.op) {
        case mtiaTorchOpCopy: v = loadDouble(a, p.a.dtype); break;
        case mtiaTorchOpFill: v = p.alpha; break;
        case mtiaTorchOpLinComb:
            v = p.alpha * loadDouble(a, p.a.dtype) + p.beta * loadDouble(b, p.b.dtype);
            break;
        case mtiaTorchOpScale: v = p.alpha * loadDouble(a, p.a.dtype); break;
        case mtiaTorchOpMul: v = loadDouble(a, p.a.dtype) * loadDouble(b, p.b.dtype); break;
        case mtiaTorchOpRelu:
            v = loadDouble(a, p.a.dtype);
            v = v < 0.0 ? 0.0 : v;
            break;
        case mtiaTorchOpSumInto: v = loadDouble(out, p.out.dtype) + loadDouble(a, p.a.dtype); break;
        case mtiaTorchOpThresholdBackward:
            v = loadDouble(b, p.b.dtype) <= p.alpha ? 0.0 : loadDouble(a, p.a.dtype);
            break;
        default: break;
        }
        storeDouble(out, p.out.dtype, v);
    } else if (p.op == mtiaTorchOpCopy && isFloating(p.a.dtype)) {
        storeDouble(out, p.out.dtype, loadDouble(a, p.a.dtype));  // the CPU's float -> int
    } else {
        int64_t v = 0;
        switch (p.op) {
        case mtiaTorchOpCopy: v = loadInt(a, p.a.dtype); break;
        case mtiaTorchOpFill: v = p.ialpha; break;
        case mtiaTorchOpLinComb:
            v = wrapAdd(wrapMul(p.ialpha, loadInt(a, p.a.dtype)),
                        wrapMul(p.ibeta, loadInt(b, p.b.dtype)));
            break;
        case mtiaTorchOpScale: v = wrapMul(p.ialpha, loadInt(a, p.a.dtype)); break;
        case mtiaTorchOpMul: v = wrapMul(loadInt(a, p.a.dtype), loadInt(b, p.b.dtype)); break;
        case mtiaTorchOpRelu: v = std::max<int64_t>(0, loadInt(a, p.a.dtype)); break;
        case mtiaTorchOpSumInto:
            v = wrapAdd(loadInt(out, p.out.dtype), loadInt(a, p.a.dtype));
            break;
        case mtiaTorchOpThresholdBackward:
            v = loadInt(b, p.b.dtype) <= p.ialpha ? 0 : loadInt(a, p.a.dtype);
            break;
        default: break;
        }
        storeInt(out, p.out.dtype, v);
    }
}

}  // namespace

MTIA_SIM_KERNEL_ARGS(mtia_torch_elementwise, 1, sizeof(mtiaTorchElementwise));

MTIA_SIM_KERNEL(mtia_torch_elementwise) {
    mtiaTorchElementwise p;
    std::memcpy(&p, args[0], sizeof p);
    if (p.op < mtiaTorchOpCopy || p.op > mtiaTorchOpThresholdBackward) {
        paramFault(ctx, "is not an operation", "op");
        return;
    }
    if (p.ndim < 0 || p.ndim > MTIA_TORCH_MAX_DIMS) {
        paramFault(ctx, "is out of range", "ndim");
        return;
    }
    // Sums write one output element from many input elements: one block does it all, in order.
    const bool single = p.op == mtiaTorchOpSumInto;
    const uint64_t blocks = single ? 1 : blockCount(ctx);
    const uint64_t block = blockIndex(ctx);
    if (block >= blocks) return;
    const uint64_t chunk = p.numel / blocks + (p.numel % blocks != 0 ? 1 : 0);
    const uint64_t begin = std::min(p.numel, block * chunk);
    const uint64_t end = std::min(p.numel, begin + chunk);
    if (begin >= end) return;
    if (!checkTensor(ctx, p, p.out, "out")) return;
    if (usesA(p.op) && !checkTensor(ctx, p, p.a, "a")) return;
    if (usesB(p.op) && !checkTensor(ctx, p, p.b, "b")) return;
    for (uint64_t i = begin; i < end; ++i) apply(p, i);
}
