// Signals raised by kernels become device faults instead of ending the process.
//
// While an engine thread runs a kernel (built-in or from a module) it publishes a thread-local
// KernelTrap. The process-wide handler for SIGSEGV, SIGBUS, SIGFPE, SIGILL and SIGABRT (installed
// once, when the first engine starts, with SA_SIGINFO | SA_ONSTACK) runs on the engine's alternate
// signal stack; when the signal was raised by this thread inside a kernel, it records the signal in
// the trap and jumps out of the kernel (siglongjmp), and the engine then records a sticky fault on
// the device. Every other signal goes to the handler installed before ours (its sa_sigaction or
// sa_handler, as its flags say); a default disposition is restored and the signal raised again, so
// the process ends as it would have without us (with the right signal, and a core where that
// signal makes one); an ignored synchronous fault is raised again with the default disposition, as
// the kernel would (an ignored SIGSEGV cannot be ignored).
//
// The launch path makes no system call: sigsetjmp(env, 0) saves no signal mask, and the engine
// thread's mask is restored only after a jump (SignalGuard::restoreMask).
//
// Limits, by design or because a signal handler cannot do better:
// - The jump leaves the kernel's frames without unwinding them: a kernel that faults while it holds
//   a lock leaves it held, memory it allocated leaks, C++ destructors of its frames do not run.
// - A fault is recognised as the kernel's when the signal was raised on the engine thread while
//   the trap was published, either by the CPU (si_code > 0) or by the thread itself (raise, abort:
//   SI_TKILL/SI_USER from this process). kill() of another process hitting an engine thread
//   mid-kernel is chained like any other signal.
// - Host functions (mtiaLaunchHostFunc) are the application's own code: no trap is published while
//   they run, so their faults are not swallowed.
// - An application that installs its own handler after the first engine started replaces ours; its
//   kernels' faults then reach that handler (and end the process unless it chains to the handler it
//   replaced, as Python's faulthandler does).
// - Stack overflow inside a kernel is caught (the handler runs on the alternate stack) only where
//   the engine thread's guard page turns it into a SIGSEGV.
// - Sanitizers (ASan, TSan) install handlers for these signals too; ours replace theirs when the
//   first engine starts (docs/abi.md says how the fault tests run under them).
#pragma once

#include <signal.h>

#include <csetjmp>
#include <cstdint>

namespace mtia::sim {

// Where a kernel run returns to when it raised a signal, and what the handler saw.
struct KernelTrap {
    sigjmp_buf env;
    volatile int signo = 0;
    volatile int code = 0;             // si_code
    void* volatile address = nullptr;  // si_addr: the faulting address for SIGSEGV and SIGBUS
};

// The trap of the kernel the calling thread runs now, or null. The handler reaches it without
// touching thread-local storage (which may allocate in a thread that never used it): through the
// header of the engine's alternate signal stack, which holds this variable's address.
extern thread_local KernelTrap* tKernelTrap;

// An engine thread's signal set-up, for the thread's life (a local of its main function, so that
// it is undone also when the thread is cancelled): installs the process-wide handlers (once), gives
// the thread an alternate signal stack and remembers its signal mask; the destructor puts the
// thread's previous alternate stack back and frees ours. Never throws; failures leave kernels'
// signals with their old behaviour (logged once to stderr). The stacks are listed in a global, so
// that a forked child (which has no engine threads) still sees them as reachable memory.
class EngineSignals {
public:
    EngineSignals() noexcept;
    ~EngineSignals();
    EngineSignals(const EngineSignals&) = delete;
    EngineSignals& operator=(const EngineSignals&) = delete;

private:
    void* stack_ = nullptr;
    stack_t previous_{};
};

// After a jump out of a kernel: the engine thread's signal mask as it was before the signal (the
// handler's mask blocked the signal, and the jump saved no mask).
void restoreEngineSignalMask() noexcept;

// "SIGSEGV", "SIGFPE", ...
const char* signalName(int signo) noexcept;

}  // namespace mtia::sim
