// Helpers of the IPC tests: the test process itself never starts the runtime;
// every exporter and importer is a forked child (tests/common/child_process.hpp)
// that starts its own (and so registers anew), reports failures on stderr and
// exits with a code (0: all checks held), and talks to its peers through pipes.
#pragma once

#include <gtest/gtest.h>
#include <mtia/mtia.h>

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <string>

#include "common/child_process.hpp"
#include "common/memory.hpp"

namespace mtia::ipc::test {

using ::mtia_test::Channel;
using ::mtia_test::forkChild;
using ::mtia_test::killChild;
using ::mtia_test::KillOnExit;
using ::mtia_test::kMiB;
using ::mtia_test::waitChild;
using ::mtia_test::watchdog;

// A check in a child: on failure, say what and why (the runtime's last message) and exit with the
// line.
#define IPC_CHECK(cond)                                                                            \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            std::fprintf(stderr, "%s:%d: check failed: %s (last error: %s)\n", __FILE__, __LINE__, \
                         #cond, mtiaGetLastErrorMessage());                                        \
            return 1 + __LINE__ % 250;                                                             \
        }                                                                                          \
    } while (0)

// A status check that also requires the last-error message to contain text.
#define IPC_CHECK_ERROR(call, code, text)                                                          \
    do {                                                                                           \
        const mtiaError_t ipcStatus_ = (call);                                                     \
        if (ipcStatus_ != (code) || std::strstr(mtiaGetLastErrorMessage(), (text)) == nullptr) {   \
            std::fprintf(                                                                          \
                stderr,                                                                            \
                "%s:%d: %s returned %s (expected %s), message '%s' (expected to contain '%s')\n",  \
                __FILE__, __LINE__, #call, mtiaGetErrorName(ipcStatus_), mtiaGetErrorName(code),   \
                mtiaGetLastErrorMessage(), (text));                                                \
            return 1 + __LINE__ % 250;                                                             \
        }                                                                                          \
    } while (0)

// IPC_CHECK_ERROR for one case of a table: the message names the case too.
#define IPC_CHECK_ERROR_IN(name, call, code, text)                                                 \
    do {                                                                                           \
        const mtiaError_t ipcStatus_ = (call);                                                     \
        if (ipcStatus_ != (code) || std::strstr(mtiaGetLastErrorMessage(), (text)) == nullptr) {   \
            std::fprintf(                                                                          \
                stderr,                                                                            \
                "%s:%d: case %s: %s returned %s (expected %s), message '%s' (expected to contain " \
                "'%s')\n",                                                                         \
                __FILE__, __LINE__, (name), #call, mtiaGetErrorName(ipcStatus_),                   \
                mtiaGetErrorName(code), mtiaGetLastErrorMessage(), (text));                        \
            return 1 + __LINE__ % 250;                                                             \
        }                                                                                          \
    } while (0)

// The shape of most IPC tests: an exporter and an importer, each a forked child with a runtime of
// its own, forked in that order; between (if any) is the test process's part while both run (a
// failure there ends the test and kills both). Expects both to exit with 0, the importer first.
void expectExporterAndImporterPass(const std::function<int()>& exporter,
                                   const std::function<int()>& importer,
                                   const std::function<::testing::AssertionResult()>& between = {});

// The test process's part of the tests whose exporter holds its stream until the importer has
// queued its wait: waits for the importer's word on toParent, then lets the exporter's stream go on
// release.
::testing::AssertionResult releaseWhenSaid(Channel& toParent, Channel& release);

// The descriptor number of device 0's memory file in process pid (-1 if none).
int memoryFileOf(pid_t pid);

}  // namespace mtia::ipc::test
