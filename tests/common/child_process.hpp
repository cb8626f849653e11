// Forked children for the fork-based tests (registry, IPC): children that run a function and exit
// with its result, their reaping, and pipes between the test and its children. Uses no runtime
// call.
//
// A program that links these also gets this library's ThreadSanitizer options (child_process.cpp):
// build it with its symbols exported (ENABLE_EXPORTS / export_dynamic) so the sanitizer finds them.
#pragma once

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <functional>

namespace mtia_test {

// Forks; the child runs body and _exits with its result (0..255; 255 when body throws). Never
// returns in the child.
pid_t forkChild(const std::function<int()>& body);
// Waits for pid: its exit code, or 128 + signal; -1 on error.
int waitChild(pid_t pid);
// SIGKILLs pid and reaps it.
void killChild(pid_t pid);

// Kills and reaps a child still running when the test leaves early (a failed ASSERT).
struct KillOnExit {
    pid_t pid;
    ~KillOnExit() {
        if (pid > 0 && waitpid(pid, nullptr, WNOHANG) == 0) killChild(pid);
    }
};

// Makes a child die (SIGALRM) instead of hanging past seconds.
inline void watchdog(unsigned seconds = 60) {
    alarm(seconds);
}

// A one-way pipe of fixed-size messages between two processes (made before the fork).
class Channel {
public:
    Channel();
    ~Channel();
    Channel(const Channel&) = delete;
    Channel& operator=(const Channel&) = delete;
    bool send(const void* data, size_t size);
    // False on timeout or when every writer is gone.
    bool receive(void* data, size_t size, int timeoutMs = 20000);
    template <class T>
    bool send(const T& value) {
        return send(&value, sizeof value);
    }
    template <class T>
    bool receive(T& value, int timeoutMs = 20000) {
        return receive(&value, sizeof value, timeoutMs);
    }
    // Closes this process's write end: a reader then sees the writer gone once every copy is
    // closed.
    void closeWriter();

private:
    int fds_[2];
};

// A one-shot signal between processes: a Channel of one byte.
class ChildGate {
public:
    void open();  // let the waiter go on
    bool
    wait(int timeoutMs = 10000);  // true when opened (false on timeout or when the writer died)
    void closeWriter() { pipe_.closeWriter(); }

private:
    Channel pipe_;
};

}  // namespace mtia_test
