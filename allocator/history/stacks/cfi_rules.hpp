// How to step from one x86-64 frame to its caller at one code address, derived from the .eh_frame
// call frame information (the DWARF CFI program of the address's FDE, run up to the address) and
// reduced to the few cases a frame-walker can apply with plain arithmetic: the CFA is RSP or RBP
// plus a constant, the return address and (when it was saved) the caller's RBP lie at constant
// offsets from the CFA, and RSP in the caller is the CFA. Anything else (DWARF expressions,
// registers saved in other registers, signal frames, an address with no FDE) is Unsupported: the
// caller then uses a full unwinder instead. native_stack.cpp caches these per address.
#pragma once

#include <cstdint>

namespace mtia {

struct FrameRule {
    enum Kind : uint8_t {
        kUnsupported = 0,  // no FDE, or CFI this reduction does not describe
        kFrame = 1,        // an ordinary frame: the fields below apply
        kOutermost = 2,    // the return address is undefined (_start, clone): the walk ends here
    };
    enum CfaBase : uint8_t { kRsp = 0, kRbp = 1 };

    int32_t cfaOffset = 0;  // CFA = base register + cfaOffset
    int16_t rbpOffset =
        0;  // the caller's RBP is at CFA + rbpOffset when rbpSaved; else RBP is unchanged
    int8_t raOffset = 0;  // the return address is at CFA + raOffset (-8 for ordinary code)
    uint8_t kind : 2 = kUnsupported;
    uint8_t cfaBase : 1 = kRsp;
    uint8_t rbpSaved : 1 = 0;
};
static_assert(sizeof(FrameRule) == 8);

// The rule in effect at code address pc (the exact address of an instruction: for a caller's frame,
// its return address minus 1, which lies inside the call). Finds the FDE with libgcc's
// _Unwind_Find_FDE. Thread-safe; may take the dynamic loader's lock; does not allocate.
FrameRule frameRuleAt(uintptr_t pc) noexcept;

// The rule at pc from one FDE (its first byte: the length field) of a function starting at func.
// Exposed for tests; frameRuleAt finds the FDE and calls this.
FrameRule frameRuleFromFde(const uint8_t* fde, uintptr_t func, uintptr_t pc) noexcept;

}  // namespace mtia
