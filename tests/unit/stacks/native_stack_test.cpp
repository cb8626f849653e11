// The cached frame-walker (captureNativeStack, captureNativeStackFrom) against libgcc's
// _Unwind_Backtrace on many stacks: deep recursion through frames of many sizes, alloca and
// variable-length arrays (RBP-based CFAs), std::function and lambdas, qsort's callback (libc code),
// several threads at once, signal handlers (on the thread's stack and on an alternate one, where
// the walker must hand over to libgcc), with skip, max and from. The answers must be identical.
// Also the CFI reduction on a hand-made FDE, and a micro benchmark printed next to the results (not
// asserted).
#include "allocator/history/stacks/cfi_rules.hpp"
#include "allocator/history/stacks/native_stack.hpp"

#include <alloca.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unwind.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

namespace mtia {
namespace {

constexpr size_t kBuf = 512;

// ---- The reference: libgcc's walk, cut to the documented semantics ------------------------------

// Return addresses, innermost first, in a fixed buffer: the captures also run in signal handlers,
// where nothing may allocate.
struct Ras {
    uintptr_t ra[1024];
    size_t n = 0;
};

_Unwind_Reason_Code refStep(_Unwind_Context* ctx, void* arg) {
    const _Unwind_Ptr ip = _Unwind_GetIP(ctx);
    if (ip == 0) return _URC_END_OF_STACK;
    auto* r = static_cast<Ras*>(arg);
    if (r->n == std::size(r->ra)) return _URC_END_OF_STACK;
    r->ra[r->n++] = ip;
    return _URC_NO_REASON;
}

// The caller's stack from _Unwind_Backtrace called right here: ra[0] is the return into this
// function, ra[1] into its caller.
[[gnu::noinline]] void libgccStack(Ras* out) {
    _Unwind_Backtrace(refStep, out);
    asm volatile("" : : "r"(out) : "memory");
}

size_t copyOut(const Ras& ras, size_t first, void** out, size_t max) {
    size_t n = 0;
    for (size_t i = first; i < ras.n && n < max; ++i)
        out[n++] = reinterpret_cast<void*>(ras.ra[i] - 1);
    return n;
}

// Same signature and meaning as captureNativeStack.
[[gnu::noinline]] size_t refCapture(void** out, size_t max, size_t skip) {
    Ras ras;
    libgccStack(&ras);  // [0]: into libgccStack, [1]: into this function, [2]: into its caller
    return copyOut(ras, 2 + skip, out, max);
}

// Same signature and meaning as captureNativeStackFrom.
[[gnu::noinline]] size_t refCaptureFrom(void** out, size_t max, const void* from) {
    Ras ras;
    libgccStack(&ras);
    size_t first = 2;
    for (size_t i = 2; i < ras.n; ++i) {
        if (ras.ra[i] == reinterpret_cast<uintptr_t>(from)) {
            first = i;
            break;
        }
    }
    return copyOut(ras, first, out, max);
}

using CaptureFn = size_t (*)(void**, size_t, size_t);
using CaptureFromFn = size_t (*)(void**, size_t, const void*);

// The two answers, in fixed buffers (no allocation: signal handlers use them too).
struct Pair {
    void* fast[kBuf];
    void* ref[kBuf];
    size_t nFast = 0;
    size_t nRef = 0;
    bool same() const { return nFast == nRef && std::equal(fast, fast + nFast, ref); }
};

// Both captures through the same call instruction (a loop the compiler cannot unroll), so that even
// the innermost frame must match.
[[gnu::noinline]] void captureBoth(size_t max, size_t skip, Pair* p) {
    const CaptureFn fns[2] = {captureNativeStack, refCapture};
    void** bufs[2] = {p->fast, p->ref};
    size_t n[2] = {0, 0};
    int count = 2;
    asm volatile("" : "+r"(count));
    for (int i = 0; i < count; ++i) {
        CaptureFn f = fns[i];
        asm volatile("" : "+r"(f));
        n[i] = f(bufs[i], max, skip);
        asm volatile("" : : : "memory");
    }
    p->nFast = n[0];
    p->nRef = n[1];
}

[[gnu::noinline]] void captureBothFrom(size_t max, const void* from, Pair* p) {
    const CaptureFromFn fns[2] = {captureNativeStackFrom, refCaptureFrom};
    void** bufs[2] = {p->fast, p->ref};
    size_t n[2] = {0, 0};
    int count = 2;
    asm volatile("" : "+r"(count));
    for (int i = 0; i < count; ++i) {
        CaptureFromFn f = fns[i];
        asm volatile("" : "+r"(f));
        n[i] = f(bufs[i], max, from);
        asm volatile("" : : : "memory");
    }
    p->nFast = n[0];
    p->nRef = n[1];
}

std::atomic<int> gMismatches{0};
std::atomic<long> gComparisons{0};

void expectSame(const Pair& p, const char* what, size_t max, size_t skipOrIndex) {
    gComparisons.fetch_add(1, std::memory_order_relaxed);
    if (p.same()) return;
    if (gMismatches.fetch_add(1) >= 5) return;  // the first few are enough to read
    std::string s;
    char line[96];
    for (size_t i = 0; i < std::max(p.nFast, p.nRef); ++i) {
        std::snprintf(line, sizeof line, "\n  %3zu %18p %18p", i, i < p.nFast ? p.fast[i] : nullptr,
                      i < p.nRef ? p.ref[i] : nullptr);
        s += line;
    }
    ADD_FAILURE() << what << " max=" << max << " skip/from#=" << skipOrIndex << ": fast " << p.nFast
                  << " frames, libgcc " << p.nRef << " (fast, libgcc):" << s;
}

// Every comparison, from wherever it is called.
[[gnu::noinline]] void compareHere() {
    static thread_local Pair p;
    for (size_t skip : {0, 1, 2, 3, 7, 10000}) {
        for (size_t max : {kBuf, size_t{1}, size_t{3}, size_t{16}}) {
            captureBoth(max, skip, &p);
            expectSame(p, "skip", max, skip);
        }
    }
    // from: several frames of this stack (raw return addresses), one that is nowhere, and none.
    captureBoth(kBuf, 0, &p);
    std::vector<const void*> froms{nullptr, reinterpret_cast<const void*>(0x1234)};
    const size_t n = p.nRef;
    for (size_t i : {size_t{0}, size_t{1}, size_t{2}, n / 3, n / 2, n - 1})
        if (i < n) froms.push_back(static_cast<const char*>(p.ref[i]) + 1);
    for (size_t k = 0; k < froms.size(); ++k) {
        for (size_t max : {kBuf, size_t{1}, size_t{3}}) {
            captureBothFrom(max, froms[k], &p);
            expectSame(p, "from", max, k);
        }
    }
}

// ---- Stacks of many shapes ----------------------------------------------------------------------

using Leaf = std::function<void()>;
int descend(int depth, unsigned seed, const Leaf& leaf);

unsigned next(unsigned seed) {
    return seed * 1103515245u + 12345u;
}

template <size_t N>
[[gnu::noinline]] int fixedFrame(int depth, unsigned seed, const Leaf& leaf) {
    volatile char buf[N];
    buf[0] = static_cast<char>(depth);
    buf[N - 1] = static_cast<char>(seed);
    const int r = descend(depth - 1, next(seed), leaf);
    return r + buf[0] + buf[N - 1];
}

[[gnu::noinline]] int allocaFrame(int depth, unsigned seed, const Leaf& leaf) {
    const size_t n = 16 + (seed >> 8) % 700;
    char* p = static_cast<char*>(alloca(n));
    std::memset(p, static_cast<int>(depth), n);
    asm volatile("" : : "r"(p) : "memory");
    const int r = descend(depth - 1, next(seed), leaf);
    return r + p[n - 1];
}

[[gnu::noinline]] int vlaFrame(int depth, unsigned seed, const Leaf& leaf) {
    const int n = 1 + static_cast<int>((seed >> 9) % 100);
    long vla[n];
    for (int i = 0; i < n; ++i) vla[i] = i + depth;
    asm volatile("" : : "r"(vla) : "memory");
    const int r = descend(depth - 1, next(seed), leaf);
    return r + static_cast<int>(vla[n - 1]);
}

[[gnu::noinline]] int functionFrame(int depth, unsigned seed, const Leaf& leaf) {
    int extra = static_cast<int>(seed & 3);
    std::function<int(int)> f = [&](int d) { return descend(d - 1, next(seed), leaf) + extra; };
    asm volatile("" : : "r"(&f) : "memory");
    return f(depth) + 1;
}

[[gnu::noinline]] int lambdaFrame(int depth, unsigned seed, const Leaf& leaf) {
    auto g = [&](auto&& self, int d, int hops) -> int {
        if (hops == 0) return descend(d - 1, next(seed), leaf);
        return self(self, d, hops - 1) + 1;
    };
    return g(g, depth, static_cast<int>(seed % 3)) + 1;
}

// Over-aligned locals next to alloca: GCC realigns the stack through a DRAP register and describes
// the CFA with a DWARF expression, which the cached walker leaves to libgcc.
[[gnu::noinline]] int realignedFrame(int depth, unsigned seed, const Leaf& leaf) {
    alignas(64) volatile char aligned[64];
    aligned[0] = static_cast<char>(depth);
    const size_t n = 16 + seed % 64;
    char* p = static_cast<char*>(alloca(n));
    std::memset(p, 1, n);
    asm volatile("" : : "r"(p), "r"(aligned) : "memory");
    const int r = descend(depth - 1, next(seed), leaf);
    return r + p[n - 1] + aligned[0];
}

struct QsortCall {
    int depth;
    unsigned seed;
    const Leaf* leaf;
    bool done;
    int result;
};
thread_local QsortCall* tlQsort = nullptr;

int qsortCompare(const void* a, const void* b) {
    QsortCall* q = tlQsort;
    if (q != nullptr && !q->done) {
        q->done = true;
        tlQsort = nullptr;  // a deeper qsort frame takes its own
        q->result = descend(q->depth - 1, next(q->seed), *q->leaf);
    }
    return *static_cast<const int*>(a) - *static_cast<const int*>(b);
}

[[gnu::noinline]] int qsortFrame(int depth, unsigned seed, const Leaf& leaf) {
    QsortCall call{depth, seed, &leaf, false, 0};
    QsortCall* outer = tlQsort;
    tlQsort = &call;
    int values[7] = {5, 3, 9, 1, 7, 2, 8};
    std::qsort(values, 7, sizeof(int), qsortCompare);
    tlQsort = outer;
    return call.result + values[0];
}

int descend(int depth, unsigned seed, const Leaf& leaf) {
    if (depth <= 0) {
        leaf();
        return 0;
    }
    switch ((seed >> 16) % 9) {
    case 0: return fixedFrame<8>(depth, seed, leaf) + 1;
    case 1: return fixedFrame<96>(depth, seed, leaf) + 1;
    case 2: return fixedFrame<1000>(depth, seed, leaf) + 1;
    case 3: return fixedFrame<6000>(depth, seed, leaf) + 1;
    case 4: return allocaFrame(depth, seed, leaf) + 1;
    case 5: return vlaFrame(depth, seed, leaf) + 1;
    case 6: return functionFrame(depth, seed, leaf) + 1;
    case 7: return lambdaFrame(depth, seed, leaf) + 1;
    default: return qsortFrame(depth, seed, leaf) + 1;
    }
}

// Stacks of depth up to maxDepth from many seeds, compared at the leaf.
void compareMany(int stacks, int maxDepth, unsigned seed0) {
    const Leaf leaf = [] { compareHere(); };
    unsigned seed = seed0;
    for (int i = 0; i < stacks; ++i) {
        seed = next(seed);
        descend(1 + static_cast<int>(seed % static_cast<unsigned>(maxDepth)), seed, leaf);
    }
}

TEST(NativeStack, MatchesLibgccOnManyStacks) {
    gMismatches = 0;
    const NativeStackStats before = nativeStackStats();
    compareMany(60, 40, 1);
    compareMany(4, 150, 2);  // deep
    EXPECT_EQ(gMismatches.load(), 0);
    const NativeStackStats after = nativeStackStats();
    EXPECT_GT(after.fast, before.fast);
    // Ordinary code (ours, libstdc++'s, glibc's qsort) needs no help from libgcc.
    EXPECT_EQ(after.fallbacks, before.fallbacks);
    std::printf("[ stats    ] %ld comparisons; this thread: %llu cached walks, %llu fallbacks, "
                "%llu rule misses\n",
                gComparisons.load(), static_cast<unsigned long long>(after.fast),
                static_cast<unsigned long long>(after.fallbacks),
                static_cast<unsigned long long>(after.misses));
}

TEST(NativeStack, MatchesLibgccOnSeveralThreadsAtOnce) {
    gMismatches = 0;
    std::atomic<int> fallbacks{0};
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < 4; ++t) {
        threads.emplace_back([t, &fallbacks] {
            compareMany(25, 30, 100 + t);
            fallbacks += static_cast<int>(nativeStackStats().fallbacks);
        });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(gMismatches.load(), 0);
    EXPECT_EQ(fallbacks.load(), 0);
}

TEST(NativeStack, EmptyAndNullBuffers) {
    void* buf[4];
    EXPECT_EQ(captureNativeStack(nullptr, 4, 0), 0u);
    EXPECT_EQ(captureNativeStack(buf, 0, 0), 0u);
    EXPECT_EQ(captureNativeStackFrom(nullptr, 4, nullptr), 0u);
    EXPECT_EQ(captureNativeStackFrom(buf, 0, nullptr), 0u);
}

// The frame this test function returns to is where from starts.
[[gnu::noinline]] size_t captureFromMyCaller(void** out, size_t max) {
    const size_t n = captureNativeStackFrom(out, max, __builtin_return_address(0));
    asm volatile("" : : : "memory");
    return n;
}

TEST(NativeStack, FromStartsAtTheGivenReturnAddress) {
    void* out[kBuf];
    void* all[kBuf];
    const size_t n = captureFromMyCaller(out, kBuf);
    const size_t m = captureNativeStack(all, kBuf, 0);
    ASSERT_GT(n, 2u);
    ASSERT_GT(m, 2u);
    // out[0] is the return into this test function; the frames above it are this function's
    // callers.
    EXPECT_EQ(std::vector<void*>(out + 1, out + n), std::vector<void*>(all + 1, all + m));
}

TEST(NativeStack, RealignedStackFallsBackToLibgcc) {
    gMismatches = 0;
    const NativeStackStats before = nativeStackStats();
    const Leaf leaf = [] { compareHere(); };
    for (unsigned seed = 0; seed < 8; ++seed) {
        const Leaf below = [&] { descend(3, next(seed) * 7919, leaf); };
        realignedFrame(1, seed, below);
    }
    EXPECT_EQ(gMismatches.load(), 0);
    EXPECT_GT(nativeStackStats().fallbacks, before.fallbacks);
}

// Loading or unloading code empties the thread's rule cache: rules for addresses that changed hands
// cannot survive.
TEST(NativeStack, DlopenAndDlcloseEmptyTheRuleCache) {
    void* buf[kBuf];
    uint64_t misses[4] = {0, 0, 0, 0};
    void* lib = nullptr;
    int rounds = 4;
    asm volatile("" : "+r"(rounds));  // one capture call site: the same stack every round
    for (int i = 0; i < rounds; ++i) {
        if (i == 2) {
            lib = dlopen("libutil.so.1", RTLD_NOW | RTLD_LOCAL);
            if (lib == nullptr) GTEST_SKIP() << "no libutil.so.1 to load: " << dlerror();
        }
        if (i == 3) dlclose(lib);
        const uint64_t before = nativeStackStats().misses;
        captureNativeStack(buf, kBuf, 0);
        misses[i] = nativeStackStats().misses - before;
    }
    EXPECT_EQ(misses[1], 0u);  // the same stack again: all hits
    EXPECT_GT(misses[2], 0u);  // after dlopen
    EXPECT_GT(misses[3], 0u);  // after dlclose
}

// ---- Signal frames: the walker hands over to libgcc, which knows the kernel's frame -------------

Pair gSignalPair;
Pair gSignalPairFrom;
NativeStackStats gSignalStats;

void onSignal(int) {
    const NativeStackStats before = nativeStackStats();
    captureBoth(kBuf, 0, &gSignalPair);
    captureBothFrom(kBuf, reinterpret_cast<const void*>(0x1234), &gSignalPairFrom);
    const NativeStackStats after = nativeStackStats();
    gSignalStats.fallbacks = after.fallbacks - before.fallbacks;
    gSignalStats.fast = after.fast - before.fast;
}

[[gnu::noinline]] void raiseFrom(int depth) {
    if (depth > 0) {
        raiseFrom(depth - 1);
        asm volatile("" : : : "memory");
        return;
    }
    raise(SIGUSR1);
}

void checkSignalCapture(bool altStack) {
    std::vector<char> alt(1 << 18);
    stack_t ss{};
    stack_t old{};
    if (altStack) {
        ss.ss_sp = alt.data();
        ss.ss_size = alt.size();
        ASSERT_EQ(sigaltstack(&ss, &old), 0);
    }
    struct sigaction sa {};
    struct sigaction oldSa {};
    sa.sa_handler = onSignal;
    sa.sa_flags = altStack ? SA_ONSTACK : 0;
    sigemptyset(&sa.sa_mask);
    ASSERT_EQ(sigaction(SIGUSR1, &sa, &oldSa), 0);
    gSignalPair.nFast = gSignalPair.nRef = 0;
    raiseFrom(5);
    sigaction(SIGUSR1, &oldSa, nullptr);
    if (altStack) sigaltstack(&old, nullptr);
    gMismatches = 0;
    expectSame(gSignalPair, altStack ? "signal on an alternate stack" : "signal", kBuf, 0);
    expectSame(gSignalPairFrom, "signal, from nowhere", kBuf, 0);
    EXPECT_EQ(gMismatches.load(), 0);
    // Through the kernel's signal frame: more than the handler's own frames.
    EXPECT_GT(gSignalPair.nFast, 8u);
    EXPECT_EQ(gSignalStats.fallbacks, 2u);
}

TEST(NativeStack, SignalHandlerFallsBackToLibgcc) {
    checkSignalCapture(false);
}
TEST(NativeStack, SignalHandlerOnAlternateStackFallsBackToLibgcc) {
    checkSignalCapture(true);
}

// ---- The CFI reduction on a hand-made CIE and FDE -----------------------------------------------

struct Bytes {
    std::vector<uint8_t> b;
    Bytes& operator()(std::initializer_list<int> v) {
        for (int x : v) b.push_back(static_cast<uint8_t>(x));
        return *this;
    }
    void u32At(size_t at, uint32_t v) { std::memcpy(&b[at], &v, 4); }
};

// A CIE ("zR", code align 1, data align -8, RA column 16, CFA = RSP + 8, RA at CFA - 8) and one FDE
// whose program is given; returns the FDE's offset in out.
size_t makeFde(Bytes& out, std::initializer_list<int> program, const char* aug = "zR") {
    out.b.clear();
    out({0, 0, 0, 0, 0, 0, 0, 0, 1});  // length (patched), CIE id 0, version 1
    for (const char* a = aug; *a != 0; ++a) out({*a});
    out({0, 1, 0x78, 16});       // end of augmentation, code align 1, data align -8, RA column 16
    out({1, 0x1b});              // augmentation data: R = pcrel|sdata4
    out({0x0c, 7, 8, 0x90, 1});  // def_cfa rsp 8; offset r16 at cfa-8
    while (out.b.size() % 4 != 0) out({0});
    out.u32At(0, static_cast<uint32_t>(out.b.size() - 4));
    const size_t fde = out.b.size();
    out({0, 0, 0, 0});  // length (patched)
    const size_t idField = out.b.size();
    out({0, 0, 0, 0});                    // CIE pointer (patched)
    out({0, 0, 0, 0, 0x40, 0, 0, 0, 0});  // pc_begin, pc_range 64, augmentation data length 0
    out(program);
    while ((out.b.size() - fde) % 4 != 0) out({0});
    out.u32At(fde, static_cast<uint32_t>(out.b.size() - fde - 4));
    out.u32At(idField, static_cast<uint32_t>(idField));
    out({0, 0, 0, 0});  // terminator
    return fde;
}

TEST(CfiRules, RowsOfAHandMadeProgram) {
    Bytes b;
    const size_t fde = makeFde(b, {
                                      0x41,               // advance 1
                                      0x0e, 16,           // def_cfa_offset 16
                                      0x86, 2,            // rbp at cfa-16
                                      0x43,               // advance 3 (loc 4)
                                      0x0d, 6,            // def_cfa_register rbp
                                      0x4a,               // advance 10 (loc 14)
                                      0x0a,               // remember_state
                                      0x0c, 7,  8,        // def_cfa rsp 8
                                      0xc6,               // restore rbp
                                      0x41,               // advance 1 (loc 15)
                                      0x0b,               // restore_state
                                      0x2e, 16,           // GNU_args_size 16
                                      0x45,               // advance 5 (loc 20)
                                      0x0f, 2,  0x77, 8,  // def_cfa_expression
                                      0x42,               // advance 2 (loc 22)
                                      0x07, 16,           // undefined RA
                                  });
    const uintptr_t f = 0x10000;
    auto at = [&](uintptr_t off) { return frameRuleFromFde(b.b.data() + fde, f, f + off); };
    FrameRule r = at(0);
    EXPECT_EQ(r.kind, FrameRule::kFrame);
    EXPECT_EQ(r.cfaBase, FrameRule::kRsp);
    EXPECT_EQ(r.cfaOffset, 8);
    EXPECT_EQ(r.raOffset, -8);
    EXPECT_EQ(r.rbpSaved, 0);
    for (uintptr_t off : {1, 3}) {
        r = at(off);
        EXPECT_EQ(r.cfaBase, FrameRule::kRsp) << off;
        EXPECT_EQ(r.cfaOffset, 16) << off;
        EXPECT_EQ(r.rbpSaved, 1) << off;
        EXPECT_EQ(r.rbpOffset, -16) << off;
    }
    for (uintptr_t off : {4, 13, 15, 19}) {
        r = at(off);
        EXPECT_EQ(r.kind, FrameRule::kFrame) << off;
        EXPECT_EQ(r.cfaBase, FrameRule::kRbp) << off;
        EXPECT_EQ(r.cfaOffset, 16) << off;
        EXPECT_EQ(r.rbpSaved, 1) << off;
    }
    r = at(14);
    EXPECT_EQ(r.cfaBase, FrameRule::kRsp);
    EXPECT_EQ(r.cfaOffset, 8);
    EXPECT_EQ(r.rbpSaved, 0);
    EXPECT_EQ(at(20).kind, FrameRule::kUnsupported);
    EXPECT_EQ(at(21).kind, FrameRule::kUnsupported);
    EXPECT_EQ(at(22).kind, FrameRule::kOutermost);
}

TEST(CfiRules, UnsupportedConstructs) {
    Bytes b;
    struct Case {
        const char* what;
        std::initializer_list<int> program;
    };
    const Case cases[] = {
        {"expression for rbp", {0x10, 6, 2, 0x77, 0}},
        {"rbp in a register", {0x09, 6, 3}},
        {"ra in a register", {0x09, 16, 0}},
        {"val_offset rbp", {0x14, 6, 2}},
        {"val_expression ra", {0x16, 16, 1, 0x30}},
        {"cfa on rbx", {0x0c, 3, 16}},
        {"rule for rsp", {0x87, 2}},
        {"restore_state without remember", {0x0b}},
        {"set_loc", {0x01, 0, 0, 0, 0}},
        {"unknown opcode", {0x3f}},
        {"truncated", {0x0c, 7, 0x80}},  // 3 bytes: no padding follows
    };
    for (const Case& c : cases) {
        const size_t fde = makeFde(b, c.program);
        EXPECT_EQ(frameRuleFromFde(b.b.data() + fde, 0x1000, 0x1000).kind, FrameRule::kUnsupported)
            << c.what;
    }
    // The same registers on columns the walker does not use change nothing.
    const size_t fde = makeFde(b, {0x10, 3, 2, 0x77, 0, 0x09, 12, 13, 0x0e, 24});
    const FrameRule r = frameRuleFromFde(b.b.data() + fde, 0x1000, 0x1000);
    EXPECT_EQ(r.kind, FrameRule::kFrame);
    EXPECT_EQ(r.cfaOffset, 24);
    // A signal frame's CIE ("zRS").
    const size_t sig = makeFde(b, {}, "zRS");
    EXPECT_EQ(frameRuleFromFde(b.b.data() + sig, 0x1000, 0x1000).kind, FrameRule::kUnsupported);
}

TEST(CfiRules, RealCodeHasOrdinaryRules) {
    // This test function's own code: a plain frame, the return address at CFA - 8.
    uintptr_t pc = 0;
    asm volatile("leaq 0(%%rip), %0" : "=r"(pc));
    const FrameRule r = frameRuleAt(pc);
    EXPECT_EQ(r.kind, FrameRule::kFrame);
    EXPECT_EQ(r.raOffset, -8);
    EXPECT_EQ(frameRuleAt(1).kind, FrameRule::kUnsupported);  // no FDE
}

// ---- Micro benchmark (printed, not asserted) ----------------------------------------------------

double medianNs(CaptureFn f, int batches, int perBatch, size_t* frames) {
    std::vector<double> ns;
    void* buf[64];
    for (int b = 0; b < batches; ++b) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < perBatch; ++i) {
            *frames = f(buf, 64, 0);
            asm volatile("" : : "r"(buf) : "memory");
        }
        const auto t1 = std::chrono::steady_clock::now();
        ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / perBatch);
    }
    std::sort(ns.begin(), ns.end());
    return ns[ns.size() / 2];
}

// The stack the memory history sees: captureNativeStack on a ~20-frame stack, the plain libgcc walk
// (the previous implementation) next to it.
[[gnu::noinline]] size_t libgccCapture(void** out, size_t max, size_t skip) {
    struct W {
        void** out;
        size_t max, skip, count;
    } w{out, max, skip + 1, 0};
    _Unwind_Backtrace(
        [](_Unwind_Context* ctx, void* arg) {
            auto* w = static_cast<W*>(arg);
            const _Unwind_Ptr ip = _Unwind_GetIP(ctx);
            if (ip == 0) return _URC_END_OF_STACK;
            if (w->skip > 0) {
                --w->skip;
                return _URC_NO_REASON;
            }
            if (w->count == w->max) return _URC_END_OF_STACK;
            w->out[w->count++] = reinterpret_cast<void*>(ip - 1);
            return _URC_NO_REASON;
        },
        &w);
    return w.count;
}

TEST(NativeStack, MicroBenchmark) {
    void* probe[64];
    const size_t here = captureNativeStack(probe, 64, 0);
    const int depth = here < 20 ? static_cast<int>(20 - here) : 0;
    const Leaf leaf = [] {
        size_t fastFrames = 0, slowFrames = 0;
        medianNs(captureNativeStack, 3, 1000, &fastFrames);  // warm
        const double fast = medianNs(captureNativeStack, 15, 2000, &fastFrames);
        const double slow = medianNs(libgccCapture, 15, 200, &slowFrames);
        std::printf("[ bench    ] capture of a %zu-frame stack: cached walker %.0f ns, "
                    "_Unwind_Backtrace %.0f ns "
                    "(%zu frames), medians of 15 batches; %.1fx\n",
                    fastFrames, fast, slow, slowFrames, slow / fast);
        EXPECT_EQ(fastFrames, slowFrames);
    };
    // Plain frames only (seed picks fixedFrame<8>), the shape of a call path into the runtime.
    std::function<int(int)> down = [&](int d) -> int {
        if (d == 0) {
            leaf();
            return 0;
        }
        return fixedFrame<8>(1, 0, [&] { down(d - 1); }) + 1;
    };
    down(depth / 3);
}

}  // namespace
}  // namespace mtia
