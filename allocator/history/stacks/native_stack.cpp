#include "allocator/history/stacks/native_stack.hpp"

#include "allocator/history/stacks/cfi_rules.hpp"

#include <link.h>
#include <pthread.h>
#include <unwind.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>

namespace mtia {

namespace {

// Where the frames go, in the order a walk meets their return addresses (innermost first), for both
// walkers: the cached one below and libgcc's _Unwind_Backtrace, so that both give the same answer.
struct Sink {
    void** out;
    size_t max;
    size_t skip;     // frames still to leave out
    uintptr_t from;  // while non-zero, looking for the frame with this return address
    size_t count = 0;

    // Takes one return address; false when no more are wanted.
    bool add(uintptr_t ra) {
        if (skip > 0) {
            --skip;
            return true;
        }
        if (from != 0) {
            if (ra != from) {
                // Kept in case from never turns up (then the answer is all frames); the walk must
                // go on to the end to know.
                if (count < max) out[count] = reinterpret_cast<void*>(ra - 1);
                ++count;
                return true;
            }
            from = 0;
            count = 0;
        }
        if (count == max) return false;
        // A return address points after the call: one byte back lies inside the calling
        // instruction, which names the right function (and line) even when the call is the last
        // instruction.
        out[count++] = reinterpret_cast<void*>(ra - 1);
        return true;
    }
    size_t result() const { return count < max ? count : max; }
};

_Unwind_Reason_Code step(_Unwind_Context* ctx, void* arg) {
    const _Unwind_Ptr ip = _Unwind_GetIP(ctx);
    if (ip == 0) return _URC_END_OF_STACK;
    return static_cast<Sink*>(arg)->add(ip) ? _URC_NO_REASON : _URC_END_OF_STACK;
}

// The slow, general walk. Inlined into the capture functions, so that _Unwind_Backtrace's first
// frame is theirs: the + 1 leaves it out.
[[gnu::always_inline]] inline size_t libgccBacktrace(void** out, size_t max, size_t skip,
                                                     uintptr_t from) {
    Sink s{out, max, skip + 1, from};
    _Unwind_Backtrace(step, &s);
    return s.result();
}

// ---- The cached walker ------------------------------------------------------------------------
// x86-64 only (register numbers, inline assembly); elsewhere every capture takes libgcc's walk.
#if defined(__x86_64__) && defined(__linux__)

// The state of the frame a walk starts in.
struct Regs {
    uintptr_t pc;  // an instruction in the function (not a return address)
    uintptr_t rsp;
    uintptr_t rbp;
};

// The registers of the function this is inlined into, with the address of the instruction that
// reads them: the CFI row there describes this very RSP and RBP.
[[gnu::always_inline]] inline Regs readRegs() {
    Regs r;
    asm volatile("leaq 0(%%rip), %0\n\tmovq %%rsp, %1\n\tmovq %%rbp, %2"
                 : "=&r"(r.pc), "=&r"(r.rsp), "=&r"(r.rbp));
    return r;
}

// The dynamic loader's count of objects loaded and unloaded so far: it changes on every dlopen or
// dlclose that maps or unmaps code, after which cached rules may describe code that is gone.
int generationOf(dl_phdr_info* info, size_t size, void* arg) {
    if (size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs))
        *static_cast<unsigned long long*>(arg) = info->dlpi_adds + info->dlpi_subs;
    return 1;  // the first object carries the counters; stop there
}
unsigned long long loadGeneration() {
    unsigned long long g = 0;
    dl_iterate_phdr(generationOf, &g);
    return g;
}

// One thread's rule cache: open addressing keyed by code address, a bounded probe, replacing the
// first slot probed when all are taken, so memory stays at kSlots entries however much code runs.
constexpr size_t kSlots = 4096;
constexpr size_t kProbes = 8;

struct Slot {
    uintptr_t pc;  // 0: empty
    FrameRule rule;
};
static_assert(sizeof(Slot) == 16);

struct Release {
    ~Release();
};
thread_local Release tlRelease;

// Trivially destructible, so that it stays usable during thread exit; tlRelease frees the table.
struct ThreadCache {
    Slot* slots = nullptr;
    uintptr_t stackLo = 0;  // [stackLo, stackHi): the thread's stack
    uintptr_t stackHi = 0;
    unsigned long long generation = 0;
    bool tried = false;  // set up once: table and bounds, or neither (then every capture is slow)
    bool released = false;  // thread exit freed the table
    NativeStackStats stats;

    bool ready() {
        if (slots != nullptr) return true;
        if (tried || released) return false;
        tried = true;
        pthread_attr_t attr;
        if (pthread_getattr_np(pthread_self(), &attr) != 0) return false;
        void* addr = nullptr;
        size_t size = 0;
        const bool ok = pthread_attr_getstack(&attr, &addr, &size) == 0 && size > 0;
        pthread_attr_destroy(&attr);
        if (!ok) return false;
        slots = static_cast<Slot*>(std::calloc(kSlots, sizeof(Slot)));
        if (slots == nullptr) return false;
        stackLo = reinterpret_cast<uintptr_t>(addr);
        stackHi = stackLo + size;
        generation = loadGeneration();
        // Touch tlRelease: its first use registers the destructor that frees the table at thread
        // exit.
        auto* release = &tlRelease;
        asm volatile("" : : "r"(release));
        return true;
    }

    // Drops every rule when code was loaded or unloaded since they were made.
    void revalidate() {
        const unsigned long long g = loadGeneration();
        if (g == generation) return;
        std::fill(slots, slots + kSlots, Slot{});
        generation = g;
    }

    FrameRule rule(uintptr_t pc) {
        const size_t home =
            static_cast<size_t>((pc * 0x9E3779B97F4A7C15ull) >> 52);  // 12 bits: kSlots
        Slot* victim = &slots[home];
        for (size_t i = 0; i < kProbes; ++i) {
            Slot& s = slots[(home + i) & (kSlots - 1)];
            if (s.pc == pc) return s.rule;
            if (s.pc == 0) {
                victim = &s;
                break;
            }
        }
        ++stats.misses;
        const FrameRule r = frameRuleAt(pc);
        victim->pc = pc;
        victim->rule = r;
        return r;
    }
};
static_assert(kSlots == 1u << 12);

thread_local ThreadCache tlCache;

Release::~Release() {
    std::free(tlCache.slots);
    tlCache.slots = nullptr;
    tlCache.released = true;
}

// An 8-byte load from the thread's own stack, which the bounds checks have already vetted. Not seen
// by the sanitizers: the slots read (return addresses, saved registers) lie between other frames'
// variables, which AddressSanitizer may have poisoned around them.
inline uintptr_t loadStackWord(uintptr_t at) {
    uintptr_t v;
    asm volatile("movq (%1), %0" : "=r"(v) : "r"(at));
    return v;
}

// Walks from regs with the cached rules. False when it cannot vouch for the answer (an unsupported
// rule, an address outside the stack, a CFA that does not grow); the caller then walks with libgcc.
[[gnu::noinline]] bool walkCached(ThreadCache& c, const Regs& regs, Sink& sink) {
    if (!c.ready()) return false;
    const uintptr_t lo = c.stackLo;
    const uintptr_t hi = c.stackHi;
    uintptr_t rsp = regs.rsp;
    uintptr_t rbp = regs.rbp;
    uintptr_t pc = regs.pc;
    if (rsp < lo || rsp >= hi) return false;  // on another stack (sigaltstack, a fiber)
    c.revalidate();
    for (;;) {
        const FrameRule r = c.rule(pc);
        if (r.kind == FrameRule::kOutermost) return true;
        if (r.kind != FrameRule::kFrame) return false;
        const uintptr_t base = r.cfaBase == FrameRule::kRbp ? rbp : rsp;
        const uintptr_t cfa = base + static_cast<uintptr_t>(static_cast<intptr_t>(r.cfaOffset));
        // The CFA is the caller's RSP: above this frame's, inside the stack.
        if (cfa <= rsp || cfa > hi) return false;
        const uintptr_t raAt = cfa + static_cast<uintptr_t>(static_cast<intptr_t>(r.raOffset));
        if (raAt < lo || raAt > hi - 8) return false;
        const uintptr_t ra = loadStackWord(raAt);
        if (r.rbpSaved) {
            const uintptr_t rbpAt =
                cfa + static_cast<uintptr_t>(static_cast<intptr_t>(r.rbpOffset));
            if (rbpAt < lo || rbpAt > hi - 8) return false;
            rbp = loadStackWord(rbpAt);
        }
        rsp = cfa;
        if (ra == 0) return true;  // as libgcc: a null return address ends the stack
        if (!sink.add(ra)) return true;
        pc = ra - 1;  // inside the call instruction: the row that applies while the callee runs
    }
}

#else

struct Regs {};
inline Regs readRegs() {
    return {};
}
struct ThreadCache {
    NativeStackStats stats;
};
thread_local ThreadCache tlCache;
inline bool walkCached(ThreadCache&, const Regs&, Sink&) {
    return false;
}

#endif

}  // namespace

size_t captureNativeStack(void** out, size_t max, size_t skip) noexcept {
    if (out == nullptr || max == 0) return 0;
    const Regs regs = readRegs();
    Sink s{out, max, skip, 0};
    ThreadCache& c = tlCache;
    if (walkCached(c, regs, s)) {
        ++c.stats.fast;
        return s.result();
    }
    ++c.stats.fallbacks;
    return libgccBacktrace(out, max, skip, 0);
}

size_t captureNativeStackFrom(void** out, size_t max, const void* from) noexcept {
    if (out == nullptr || max == 0) return 0;
    const Regs regs = readRegs();
    Sink s{out, max, 0, reinterpret_cast<uintptr_t>(from)};
    ThreadCache& c = tlCache;
    if (walkCached(c, regs, s)) {
        ++c.stats.fast;
        return s.result();
    }
    ++c.stats.fallbacks;
    return libgccBacktrace(out, max, 0, reinterpret_cast<uintptr_t>(from));
}

NativeStackStats nativeStackStats() noexcept {
    return tlCache.stats;
}

}  // namespace mtia
