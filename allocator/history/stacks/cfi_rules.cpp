#include "allocator/history/stacks/cfi_rules.hpp"

#include <unwind.h>

#include <cstring>
#include <limits>

// libgcc's FDE lookup (exported by libgcc_s since GCC_3.0, also in libgcc_eh; <unwind.h> does not
// declare it): the FDE covering pc, or null, and in *bases the text and data bases of its object
// and the start of the function the FDE describes.
extern "C" {
struct dwarf_eh_bases {
    void* tbase;
    void* dbase;
    void* func;
};
const void* _Unwind_Find_FDE(void* pc, struct dwarf_eh_bases* bases);
}

namespace mtia {

namespace {

// DWARF register numbers on x86-64 (System V psABI, figure 3.36).
constexpr uint64_t kRegRbp = 6;
constexpr uint64_t kRegRsp = 7;

// Call frame instructions (DWARF 5, section 6.4.2; 0x2e and 0x2f are GNU extensions).
enum : uint8_t {
    kAdvanceLoc = 0x40,  // high two bits; the low six are the operand
    kOffset = 0x80,
    kRestore = 0xc0,
    kNop = 0x00,
    kSetLoc = 0x01,
    kAdvanceLoc1 = 0x02,
    kAdvanceLoc2 = 0x03,
    kAdvanceLoc4 = 0x04,
    kOffsetExtended = 0x05,
    kRestoreExtended = 0x06,
    kUndefined = 0x07,
    kSameValue = 0x08,
    kRegister = 0x09,
    kRememberState = 0x0a,
    kRestoreState = 0x0b,
    kDefCfa = 0x0c,
    kDefCfaRegister = 0x0d,
    kDefCfaOffset = 0x0e,
    kDefCfaExpression = 0x0f,
    kExpression = 0x10,
    kOffsetExtendedSf = 0x11,
    kDefCfaSf = 0x12,
    kDefCfaOffsetSf = 0x13,
    kValOffset = 0x14,
    kValOffsetSf = 0x15,
    kValExpression = 0x16,
    kGnuArgsSize = 0x2e,
    kGnuNegativeOffsetExtended = 0x2f,
};

// Bounded little-endian reader; any read past the end clears ok and yields zeros.
struct Reader {
    const uint8_t* p;
    const uint8_t* end;
    bool ok = true;

    bool has(uint64_t n) {
        if (ok && static_cast<uint64_t>(end - p) >= n) return true;
        ok = false;
        return false;
    }
    template <typename T>
    T fixed() {
        T v{};
        if (!has(sizeof(T))) return v;
        std::memcpy(&v, p, sizeof(T));
        p += sizeof(T);
        return v;
    }
    uint8_t u8() { return fixed<uint8_t>(); }
    uint64_t uleb() {
        uint64_t v = 0;
        for (unsigned shift = 0;; shift += 7) {
            if (!has(1)) return 0;
            const uint8_t b = *p++;
            if (shift < 64) v |= static_cast<uint64_t>(b & 0x7f) << shift;
            if ((b & 0x80) == 0) return v;
        }
    }
    int64_t sleb() {
        uint64_t v = 0;
        unsigned shift = 0;
        uint8_t b = 0;
        do {
            if (!has(1)) return 0;
            b = *p++;
            if (shift < 64) v |= static_cast<uint64_t>(b & 0x7f) << shift;
            shift += 7;
        } while ((b & 0x80) != 0);
        if (shift < 64 && (b & 0x40) != 0) v |= ~uint64_t{0} << shift;
        return static_cast<int64_t>(v);
    }
    void skip(uint64_t n) {
        if (has(n)) p += n;
    }
    // Skips one pointer in DW_EH_PE encoding enc (only its size matters here: the value is not
    // needed).
    void skipEncoded(uint8_t enc) {
        if (enc == 0xff) return;  // DW_EH_PE_omit
        switch (enc & 0x0f) {
        case 0x00: skip(8); return;  // absptr
        case 0x01: uleb(); return;   // uleb128
        case 0x02: skip(2); return;  // udata2
        case 0x03: skip(4); return;  // udata4
        case 0x04: skip(8); return;  // udata8
        case 0x09: sleb(); return;   // sleb128
        case 0x0a: skip(2); return;  // sdata2
        case 0x0b: skip(4); return;  // sdata4
        case 0x0c: skip(8); return;  // sdata8
        default: ok = false; return;
        }
    }
};

// v * factor with two's-complement wrap-around (no overflow however odd the input).
int64_t factored(uint64_t v, int64_t factor) {
    return static_cast<int64_t>(v * static_cast<uint64_t>(factor));
}
int64_t factored(int64_t v, int64_t factor) {
    return factored(static_cast<uint64_t>(v), factor);
}

// How one register is recovered in the caller.
struct RegRule {
    enum How : uint8_t { kSame, kUndefined, kOffset, kOther };
    How how = kSame;
    int64_t offset = 0;  // kOffset: saved at CFA + offset
};

// One row of the CFI table, reduced to what the frame-walker uses.
struct Row {
    uint64_t cfaReg = kRegRsp;
    int64_t cfaOffset = 0;
    bool cfaExpression = false;
    RegRule rbp, rsp, ra;
};

struct Cie {
    uint64_t codeAlign = 0;
    int64_t dataAlign = 0;
    uint64_t raColumn = 0;
    uint8_t fdeEncoding = 0;  // DW_EH_PE_absptr unless the augmentation says otherwise
    bool hasAugmentationData = false;
    bool signalFrame = false;
    const uint8_t* insns = nullptr;
    const uint8_t* insnsEnd = nullptr;
};

// One entry's extent: after its length field, up to its end. Null on a bad or terminating entry.
const uint8_t* entryBody(const uint8_t* entry, const uint8_t** end, bool* wide) {
    uint32_t len32 = 0;
    std::memcpy(&len32, entry, 4);
    const uint8_t* p = entry + 4;
    uint64_t len = len32;
    *wide = false;
    if (len32 == 0xffffffffu) {  // 64-bit DWARF
        std::memcpy(&len, p, 8);
        p += 8;
        *wide = true;
    }
    if (len == 0 || len > (uint64_t{1} << 30)) return nullptr;
    *end = p + len;
    return p;
}

bool parseCie(const uint8_t* cie, Cie* out) {
    const uint8_t* end = nullptr;
    bool wide = false;
    const uint8_t* body = entryBody(cie, &end, &wide);
    if (body == nullptr) return false;
    Reader r{body, end};
    const uint64_t id = wide ? r.fixed<uint64_t>() : r.fixed<uint32_t>();
    if (id != 0) return false;  // .eh_frame CIEs have id 0
    const uint8_t version = r.u8();
    if (version != 1 && version != 3 && version != 4) return false;
    const char* aug = reinterpret_cast<const char*>(r.p);
    const size_t augLen = strnlen(aug, static_cast<size_t>(end - r.p));
    r.skip(augLen + 1);
    if (!r.ok) return false;
    if (version == 4) {
        if (r.u8() != 8) return false;  // address size
        if (r.u8() != 0) return false;  // segment selector size
    }
    out->codeAlign = r.uleb();
    out->dataAlign = r.sleb();
    out->raColumn = version == 1 ? r.u8() : r.uleb();
    if (augLen > 0 && aug[0] == 'z') {
        out->hasAugmentationData = true;
        const uint64_t dataLen = r.uleb();
        if (!r.has(dataLen)) return false;
        const uint8_t* dataEnd = r.p + dataLen;
        for (size_t i = 1; i < augLen && r.ok; ++i) {
            switch (aug[i]) {
            case 'L': r.u8(); break;                     // LSDA encoding
            case 'R': out->fdeEncoding = r.u8(); break;  // FDE pointer encoding
            case 'P': r.skipEncoded(r.u8()); break;      // personality: encoding, then the pointer
            case 'S': out->signalFrame = true; break;
            default: i = augLen; break;  // unknown: the length lets us skip the rest
            }
        }
        if (!r.ok || r.p > dataEnd) return false;
        r.p = dataEnd;
    } else if (augLen > 0) {
        return false;  // "eh" and other augmentations without 'z' cannot be skipped safely
    }
    if (!r.ok) return false;
    out->insns = r.p;
    out->insnsEnd = end;
    return true;
}

constexpr int kMaxRemembered = 16;

// Runs one CFI program on row. With pc set, stops before the first advance past pc (the row in
// effect at pc); loc is the address the row describes so far. False on anything unsupported.
bool execute(const Cie& cie, const uint8_t* insns, const uint8_t* end, const Row& initial, Row* row,
             uintptr_t* loc, bool stopAtPc, uintptr_t pc) {
    Row remembered[kMaxRemembered];
    int depth = 0;
    Reader r{insns, end};
    auto rule = [&](uint64_t reg) -> RegRule* {
        if (reg == cie.raColumn) return &row->ra;
        if (reg == kRegRbp) return &row->rbp;
        if (reg == kRegRsp) return &row->rsp;
        return nullptr;  // a register the walker never needs
    };
    auto initialRule = [&](uint64_t reg) -> RegRule {
        if (reg == cie.raColumn) return initial.ra;
        if (reg == kRegRbp) return initial.rbp;
        if (reg == kRegRsp) return initial.rsp;
        return {};
    };
    auto set = [&](uint64_t reg, RegRule::How how, int64_t offset) {
        if (RegRule* rr = rule(reg)) *rr = RegRule{how, offset};
    };
    auto advance = [&](uint64_t delta) {  // true: the row at pc is complete
        *loc += static_cast<uintptr_t>(delta * cie.codeAlign);
        return stopAtPc && *loc > pc;
    };
    while (r.ok && r.p < r.end) {
        const uint8_t op = r.u8();
        const uint8_t low = op & 0x3f;
        switch (op & 0xc0) {
        case kAdvanceLoc:
            if (advance(low)) return true;
            continue;
        case kOffset: set(low, RegRule::kOffset, factored(r.uleb(), cie.dataAlign)); continue;
        case kRestore:
            if (RegRule* rr = rule(low)) *rr = initialRule(low);
            continue;
        default: break;
        }
        switch (op) {
        case kNop: break;
        case kAdvanceLoc1:
            if (advance(r.u8())) return true;
            break;
        case kAdvanceLoc2:
            if (advance(r.fixed<uint16_t>())) return true;
            break;
        case kAdvanceLoc4:
            if (advance(r.fixed<uint32_t>())) return true;
            break;
        case kOffsetExtended: {
            const uint64_t reg = r.uleb();
            set(reg, RegRule::kOffset, factored(r.uleb(), cie.dataAlign));
            break;
        }
        case kOffsetExtendedSf: {
            const uint64_t reg = r.uleb();
            set(reg, RegRule::kOffset, factored(r.sleb(), cie.dataAlign));
            break;
        }
        case kGnuNegativeOffsetExtended: {
            const uint64_t reg = r.uleb();
            set(reg, RegRule::kOffset, factored(0 - r.uleb(), cie.dataAlign));
            break;
        }
        case kRestoreExtended: {
            const uint64_t reg = r.uleb();
            if (RegRule* rr = rule(reg)) *rr = initialRule(reg);
            break;
        }
        case kUndefined: set(r.uleb(), RegRule::kUndefined, 0); break;
        case kSameValue: set(r.uleb(), RegRule::kSame, 0); break;
        case kRegister: {
            const uint64_t reg = r.uleb();
            r.uleb();
            set(reg, RegRule::kOther, 0);
            break;
        }
        case kValOffset:
        case kValOffsetSf: {
            const uint64_t reg = r.uleb();
            if (op == kValOffset)
                r.uleb();
            else
                r.sleb();
            set(reg, RegRule::kOther, 0);
            break;
        }
        case kExpression:
        case kValExpression: {
            const uint64_t reg = r.uleb();
            r.skip(r.uleb());
            set(reg, RegRule::kOther, 0);
            break;
        }
        case kRememberState:
            if (depth == kMaxRemembered) return false;
            remembered[depth++] = *row;
            break;
        case kRestoreState:
            if (depth == 0) return false;
            *row = remembered[--depth];
            break;
        case kDefCfa:
            row->cfaReg = r.uleb();
            row->cfaOffset = static_cast<int64_t>(r.uleb());
            row->cfaExpression = false;
            break;
        case kDefCfaSf:
            row->cfaReg = r.uleb();
            row->cfaOffset = factored(r.sleb(), cie.dataAlign);
            row->cfaExpression = false;
            break;
        case kDefCfaRegister:
            row->cfaReg = r.uleb();
            row->cfaExpression = false;
            break;
        case kDefCfaOffset: row->cfaOffset = static_cast<int64_t>(r.uleb()); break;
        case kDefCfaOffsetSf: row->cfaOffset = factored(r.sleb(), cie.dataAlign); break;
        case kDefCfaExpression:
            r.skip(r.uleb());
            row->cfaExpression = true;
            break;
        case kGnuArgsSize: r.uleb(); break;
        case kSetLoc:  // needs the FDE's pointer encoding and bases: rare, not handled
        default: return false;
        }
    }
    return r.ok;
}

template <typename T>
bool fits(int64_t v) {
    return v >= std::numeric_limits<T>::min() && v <= std::numeric_limits<T>::max();
}

}  // namespace

FrameRule frameRuleFromFde(const uint8_t* fde, uintptr_t func, uintptr_t pc) noexcept {
    FrameRule unsupported;
    const uint8_t* end = nullptr;
    bool wide = false;
    const uint8_t* body = entryBody(fde, &end, &wide);
    if (body == nullptr) return unsupported;
    Reader r{body, end};
    const uint8_t* idField = r.p;
    const uint64_t ciePointer = wide ? r.fixed<uint64_t>() : r.fixed<uint32_t>();
    if (!r.ok || ciePointer == 0) return unsupported;  // 0: this is a CIE
    Cie cie;
    if (!parseCie(idField - ciePointer, &cie) || cie.signalFrame) return unsupported;
    r.skipEncoded(cie.fdeEncoding);         // pc_begin (the caller knows it as func)
    r.skipEncoded(cie.fdeEncoding & 0x0f);  // pc_range
    if (cie.hasAugmentationData) r.skip(r.uleb());
    if (!r.ok) return unsupported;

    Row row;
    uintptr_t loc = func;
    if (!execute(cie, cie.insns, cie.insnsEnd, row, &row, &loc, false, 0)) return unsupported;
    const Row initial = row;
    loc = func;
    if (!execute(cie, r.p, end, initial, &row, &loc, true, pc)) return unsupported;

    FrameRule out;
    if (row.ra.how == RegRule::kUndefined) {
        out.kind = FrameRule::kOutermost;
        return out;
    }
    if (row.cfaExpression || (row.cfaReg != kRegRsp && row.cfaReg != kRegRbp)) return unsupported;
    if (row.ra.how != RegRule::kOffset || row.rsp.how != RegRule::kSame) return unsupported;
    if (row.rbp.how == RegRule::kOther) return unsupported;
    if (!fits<int32_t>(row.cfaOffset) || !fits<int8_t>(row.ra.offset)) return unsupported;
    // Undefined RBP: libgcc leaves the register as it was, and so does the walker.
    if (row.rbp.how == RegRule::kOffset) {
        if (!fits<int16_t>(row.rbp.offset)) return unsupported;
        out.rbpSaved = 1;
        out.rbpOffset = static_cast<int16_t>(row.rbp.offset);
    }
    out.kind = FrameRule::kFrame;
    out.cfaBase = row.cfaReg == kRegRbp ? FrameRule::kRbp : FrameRule::kRsp;
    out.cfaOffset = static_cast<int32_t>(row.cfaOffset);
    out.raOffset = static_cast<int8_t>(row.ra.offset);
    return out;
}

FrameRule frameRuleAt(uintptr_t pc) noexcept {
    dwarf_eh_bases bases{};
    const void* fde = _Unwind_Find_FDE(reinterpret_cast<void*>(pc), &bases);
    if (fde == nullptr) return FrameRule{};
    return frameRuleFromFde(static_cast<const uint8_t*>(fde),
                            reinterpret_cast<uintptr_t>(bases.func), pc);
}

}  // namespace mtia
