#include "child_process.hpp"

#include <poll.h>
#include <signal.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace mtia_test {

pid_t forkChild(const std::function<int()>& body) {
    fflush(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
        int code = 255;
        try {
            code = body();
        } catch (...) {}
        _exit(code);
    }
    return pid;
}

int waitChild(pid_t pid) {
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) return -1;
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return -1;
}

void killChild(pid_t pid) {
    kill(pid, SIGKILL);
    waitChild(pid);
}

Channel::Channel() {
    if (pipe(fds_) != 0) std::abort();
}

Channel::~Channel() {
    if (fds_[0] >= 0) close(fds_[0]);
    if (fds_[1] >= 0) close(fds_[1]);
}

void Channel::closeWriter() {
    if (fds_[1] >= 0) close(fds_[1]);
    fds_[1] = -1;
}

bool Channel::send(const void* data, size_t size) {
    const char* p = static_cast<const char*>(data);
    while (size > 0) {
        const ssize_t n = write(fds_[1], p, size);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        p += n;
        size -= static_cast<size_t>(n);
    }
    return true;
}

bool Channel::receive(void* data, size_t size, int timeoutMs) {
    char* p = static_cast<char*>(data);
    while (size > 0) {
        pollfd pfd{fds_[0], POLLIN, 0};
        const int ready = poll(&pfd, 1, timeoutMs);
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) return false;
        const ssize_t n = read(fds_[0], p, size);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        p += n;
        size -= static_cast<size_t>(n);
    }
    return true;
}

void ChildGate::open() {
    const char byte = 1;
    (void)pipe_.send(byte);
}

bool ChildGate::wait(int timeoutMs) {
    char byte = 0;
    return pipe_.receive(byte, timeoutMs);
}

}  // namespace mtia_test

#if defined(__SANITIZE_THREAD__)
// ThreadSanitizer sees only this process: the registry's robust mutex lives in shared memory and is
// locked and recovered (EOWNERDEAD) by other processes, which it reports as "unlock of an unlocked
// mutex" (in forked children too, which then exit with its status 66). Mutex-misuse reports are off
// for the fork-based programs (those that link forkChild, defined in this file, which is why these
// options live here); data races are still reported. (Exported: the sanitizer runtime is a shared
// library that looks it up dynamically; the build files export the program's symbols.)
extern "C" __attribute__((visibility("default"))) const char* __tsan_default_options() {
    // die_after_fork=0: children forked after this process registered (its request watcher is a
    // thread) register anew and start their own watcher, which TSan would otherwise refuse.
    return "report_mutex_bugs=0:die_after_fork=0";
}
#endif
