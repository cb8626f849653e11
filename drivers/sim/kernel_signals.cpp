#include "kernel_signals.hpp"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace mtia::sim {

thread_local KernelTrap* tKernelTrap = nullptr;

namespace {

constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
constexpr int kMaxSignal = 64;

// The dispositions ours replaced, by signal; written once before our handlers are installed.
struct sigaction gPrevious[kMaxSignal + 1];

// A signal the CPU raised for an instruction (si_code > 0), or one this thread raised for itself
// (raise() and abort() use tgkill: SI_TKILL; kill(getpid()) is SI_USER).
bool raisedHere(const siginfo_t* info) {
    if (info == nullptr) return false;
    if (info->si_code > 0) return true;
    return (info->si_code == SI_TKILL || info->si_code == SI_USER) && info->si_pid == getpid();
}

bool synchronousFault(int signo, const siginfo_t* info) {
    return signo != SIGABRT && info != nullptr && info->si_code > 0;
}

// signal(signo, SIG_DFL), with sigaction, which is async-signal-safe.
void setDefault(int signo) {
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(signo, &dfl, nullptr);
}

// What the process would have done without us. The previous handler runs with our handler's mask
// (the signal blocked), not with its own sa_mask.
void chain(int signo, siginfo_t* info, void* context) {
    struct sigaction& prev = gPrevious[signo];
    if ((prev.sa_flags & SA_SIGINFO) != 0 && prev.sa_sigaction != nullptr) {
        if ((prev.sa_flags & SA_RESETHAND) != 0) setDefault(signo);
        prev.sa_sigaction(signo, info, context);
        return;
    }
    if (prev.sa_handler == SIG_IGN) {
        // A fault of an instruction cannot be ignored: returning would run it again for ever.
        if (synchronousFault(signo, info)) setDefault(signo);
        return;
    }
    if (prev.sa_handler == SIG_DFL || prev.sa_handler == nullptr) {
        setDefault(signo);
        // A synchronous fault recurs when the instruction runs again on return; anything else is
        // raised again (blocked here, it arrives when the handler returns).
        if (!synchronousFault(signo, info)) raise(signo);
        return;
    }
    if ((prev.sa_flags & SA_RESETHAND) != 0) setDefault(signo);
    prev.sa_handler(signo);
}

// The lowest bytes of an engine's alternate signal stack (used only if the handler overflowed it):
// what tells the handler that it runs on an engine thread, and where that thread's trap is.
struct AltStackHeader {
    uint64_t magic;
    KernelTrap** trapSlot;  // &tKernelTrap of the engine thread
    AltStackHeader* prev;   // the list of live stacks (below)
    AltStackHeader* next;
};
constexpr uint64_t kAltStackMagic = 0x6d7469612d6b7470ull;  // "mtia-ktp"

// The trap slot of the calling thread when it is an engine thread running the handler on its
// alternate stack, else null. Async-signal-safe: one sigaltstack call and a read of the stack's
// header (any alternate stack's lowest bytes are mapped, so a foreign one is safe to read too).
KernelTrap** engineTrapSlot() {
    stack_t ss{};
    if (sigaltstack(nullptr, &ss) != 0 || (ss.ss_flags & SS_ONSTACK) == 0 || ss.ss_sp == nullptr ||
        ss.ss_size < sizeof(AltStackHeader))
        return nullptr;
    const auto* header = static_cast<const AltStackHeader*>(ss.ss_sp);
    return header->magic == kAltStackMagic ? header->trapSlot : nullptr;
}

void onSignal(int signo, siginfo_t* info, void* context) {
    KernelTrap** slot = engineTrapSlot();
    KernelTrap* trap = slot != nullptr ? *slot : nullptr;
    if (trap != nullptr && raisedHere(info)) {
        *slot = nullptr;
        trap->signo = signo;
        trap->code = info->si_code;
        trap->address = info->si_addr;
        siglongjmp(trap->env, 1);
    }
    chain(signo, info, context);
}

bool gInstalled = false;

void install() {
    for (int signo : kSignals) {
        // The previous disposition is stored before ours can run and read it.
        if (sigaction(signo, nullptr, &gPrevious[signo]) != 0) continue;
        struct sigaction ours {};
        ours.sa_sigaction = onSignal;
        ours.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&ours.sa_mask);
        if (sigaction(signo, &ours, nullptr) != 0) {
            std::fprintf(stderr, "mtia sim: cannot handle signal %d of kernels\n", signo);
            continue;
        }
        // Our own handler cannot be the previous one (installed once); a second copy of the
        // driver in the process chains to the first, which is harmless.
    }
    gInstalled = true;
}

// Every engine's alternate stack, linked through their headers from a global with no destructor. A
// thread's stack is otherwise referenced only from its thread-local state, which a forked child
// does not have (the engines are not forked): there leak checkers would call the parent's stacks
// lost. Plain pointers and a mutex with a trivial destructor, so that the list outlives static
// destruction.
std::mutex gStacksMu;
AltStackHeader* gStacks = nullptr;

void linkStack(AltStackHeader* h) {
    std::lock_guard lock(gStacksMu);
    h->prev = nullptr;
    h->next = gStacks;
    if (gStacks != nullptr) gStacks->prev = h;
    gStacks = h;
}

void unlinkStack(AltStackHeader* h) {
    std::lock_guard lock(gStacksMu);
    if (h->prev != nullptr)
        h->prev->next = h->next;
    else
        gStacks = h->next;
    if (h->next != nullptr) h->next->prev = h->prev;
}

// The calling engine thread's signal mask before any kernel ran. Trivial, so that no thread-exit
// destructor is registered for it.
thread_local sigset_t tEngineMask;

}  // namespace

EngineSignals::EngineSignals() noexcept {
    static std::once_flag once;
    std::call_once(once, install);
    pthread_sigmask(SIG_SETMASK, nullptr, &tEngineMask);
    if (!gInstalled) return;
    const long minimum = sysconf(_SC_SIGSTKSZ);
    const size_t bytes = std::max<size_t>(minimum > 0 ? static_cast<size_t>(minimum) : 0, 64 << 10);
    void* stack = std::malloc(bytes);
    if (stack == nullptr) return;
    auto* header = static_cast<AltStackHeader*>(stack);
    header->magic = kAltStackMagic;
    header->trapSlot = &tKernelTrap;
    stack_t ss{};
    ss.ss_sp = stack;
    ss.ss_size = bytes;
    if (sigaltstack(&ss, &previous_) != 0) {
        std::free(stack);
        return;
    }
    linkStack(header);
    stack_ = stack;
}

EngineSignals::~EngineSignals() {
    if (stack_ == nullptr) return;
    // The stack the thread had before (a sanitizer's, which frees it itself), or none.
    if (previous_.ss_sp != nullptr && (previous_.ss_flags & SS_DISABLE) == 0) {
        sigaltstack(&previous_, nullptr);
    } else {
        stack_t off{};
        off.ss_flags = SS_DISABLE;
        sigaltstack(&off, nullptr);
    }
    unlinkStack(static_cast<AltStackHeader*>(stack_));
    std::free(stack_);
}

void restoreEngineSignalMask() noexcept {
    pthread_sigmask(SIG_SETMASK, &tEngineMask, nullptr);
}

const char* signalName(int signo) noexcept {
    switch (signo) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGABRT: return "SIGABRT (abort)";
    default: return "a signal";
    }
}

}  // namespace mtia::sim
