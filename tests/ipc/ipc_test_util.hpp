// Helpers of the IPC tests: the test process itself never starts the runtime;
// every exporter and importer is a forked child that starts its own (and so
// registers anew), reports failures on stderr and exits with a code (0: all
// checks held), and talks to its peers through pipes.
#pragma once

#include "tests/unit/registry/registry_test_util.hpp"

#include <mtia/mtia.h>

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

namespace mtia::ipc::test {

using registry::test::forkChild;
using registry::test::KillOnExit;
using registry::test::killChild;
using registry::test::waitChild;

// A check in a child: on failure, say what and why (the runtime's last message) and exit with the line.
#define IPC_CHECK(cond)                                                                                     \
  do {                                                                                                      \
    if (!(cond)) {                                                                                          \
      std::fprintf(stderr, "%s:%d: check failed: %s (last error: %s)\n", __FILE__, __LINE__, #cond,         \
                   mtiaGetLastErrorMessage());                                                             \
      return 1 + __LINE__ % 250;                                                                            \
    }                                                                                                       \
  } while (0)

// A status check that also requires the last-error message to contain text.
#define IPC_CHECK_ERROR(call, code, text)                                                                   \
  do {                                                                                                      \
    const mtiaError_t ipcStatus_ = (call);                                                                  \
    if (ipcStatus_ != (code) || std::strstr(mtiaGetLastErrorMessage(), (text)) == nullptr) {                \
      std::fprintf(stderr, "%s:%d: %s returned %s (expected %s), message '%s' (expected to contain '%s')\n", \
                   __FILE__, __LINE__, #call, mtiaGetErrorName(ipcStatus_), mtiaGetErrorName(code),         \
                   mtiaGetLastErrorMessage(), (text));                                                      \
      return 1 + __LINE__ % 250;                                                                            \
    }                                                                                                       \
  } while (0)

// A one-way pipe of fixed-size messages between two processes.
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

 private:
  int fds_[2];
};

// Makes a child die (SIGALRM) instead of hanging past seconds.
inline void watchdog(unsigned seconds = 60) { alarm(seconds); }

// The descriptor number of device 0's memory file in process pid (-1 if none).
int memoryFileOf(pid_t pid);

}  // namespace mtia::ipc::test
