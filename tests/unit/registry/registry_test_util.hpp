// Helpers of the registry's fork-based tests: a machine of its own per test
// (so tests never share a registry), children that run a function and exit,
// and a pipe to tell a child when to go on.
#pragma once

#include "platform/registry/registry.hpp"
#include "platform/registry/test_hooks.hpp"

#include <sys/types.h>
#include <sys/wait.h>

#include <functional>
#include <memory>
#include <string>

namespace mtia::registry::test {

inline constexpr uint64_t kMiB = 1ull << 20;

// A machine named after the running test and this process, with devices x memory bytes.
MachineSpec uniqueMachine(uint32_t devices = 2, uint64_t memory = 64 * kMiB);
// Removes the machine's object and lock file (whatever their state).
void removeMachine(const MachineSpec& spec);

// Opens spec read-write or fails the calling test.
std::unique_ptr<Registry> openOrFail(const MachineSpec& spec, Registry::Options options = {});

// One-shot signal between processes.
class Gate {
 public:
  Gate();
  ~Gate();
  void open();                  // let the waiter go on
  bool wait(int timeoutMs = 10000);  // true when opened (false on timeout or when the writer died)
  void closeWriter();

 private:
  int fds_[2];
};

// Forks; the child runs body and _exits with its result (0..255). Never returns in the child.
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

}  // namespace mtia::registry::test

namespace mtia::registry::test {

// Maps the machine's object read-write (as a corrupting process would) and hands its bytes to edit.
void editObject(const MachineSpec& spec, const std::function<void(char* bytes, size_t size)>& edit);
// Creates the machine's object with exactly these bytes and mode 0600 (garbage left behind).
void writeObject(const MachineSpec& spec, const std::string& bytes);
// Makes the calling process SIGKILL itself when the registry reaches point.
void killSelfAt(testing::Point point);

}  // namespace mtia::registry::test
