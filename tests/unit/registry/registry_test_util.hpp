// Helpers of the registry's fork-based tests: a machine of its own per test
// (so tests never share a registry) and ways to damage one; the children and
// the gate that tells a child when to go on are the shared ones (tests/common).
#pragma once

#include "platform/registry/registry.hpp"
#include "platform/registry/test_hooks.hpp"

#include <sys/types.h>
#include <sys/wait.h>

#include <functional>
#include <memory>
#include <string>

#include "common/child_process.hpp"

namespace mtia::registry::test {

inline constexpr uint64_t kMiB = 1ull << 20;

// A machine named after the running test and this process, with devices x memory bytes.
MachineSpec uniqueMachine(uint32_t devices = 2, uint64_t memory = 64 * kMiB);
// Removes the machine's object and lock file (whatever their state).
void removeMachine(const MachineSpec& spec);

// Opens spec read-write or fails the calling test.
std::unique_ptr<Registry> openOrFail(const MachineSpec& spec, Registry::Options options = {});

using ::mtia_test::forkChild;
using ::mtia_test::killChild;
using ::mtia_test::KillOnExit;
using ::mtia_test::waitChild;
// One-shot signal between processes.
using Gate = ::mtia_test::ChildGate;

}  // namespace mtia::registry::test

namespace mtia::registry::test {

// Maps the machine's object read-write (as a corrupting process would) and hands its bytes to edit.
void editObject(const MachineSpec& spec, const std::function<void(char* bytes, size_t size)>& edit);
// Creates the machine's object with exactly these bytes and mode 0600 (garbage left behind).
void writeObject(const MachineSpec& spec, const std::string& bytes);
// Makes the calling process SIGKILL itself when the registry reaches point.
void killSelfAt(testing::Point point);

}  // namespace mtia::registry::test
