// Cleanup and requests: removeIfUnused / cleanupMachine never pull a registry
// from under a live process (one that only opened it included, and one
// registering while cleanups run in a loop), reap dead slots, and remove what
// nobody uses; the request watcher serves a tool's request through the
// request word (in a forked child that registered anew too), answers
// NotSupported without a handler, and is joined when the slot is given up.
#include "registry_test_util.hpp"

#include "runtime/registry/cleanup.hpp"
#include "runtime/registry/requests.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

namespace mtia::registry::test {
namespace {

bool objectExists(const MachineSpec& spec) {
  const std::string name = spec.objectName(geteuid());
  return access((std::string(shmDirectory()) + "/" + name).c_str(), F_OK) == 0 && access(lockPath(name).c_str(), F_OK) == 0;
}

TEST(RegistryCleanup, RemovesOnlyWhatNobodyUses) {
  const MachineSpec spec = uniqueMachine();
  const std::string name = spec.objectName(geteuid());
  auto opened = openOrFail(spec);  // open, not registered: still in use
  CleanupReport report;
  ASSERT_TRUE(cleanupMachine(name, report));
  EXPECT_FALSE(report.removed);
  EXPECT_EQ(removeIfUnused(name).code, Code::Busy);
  EXPECT_TRUE(objectExists(spec));

  ASSERT_TRUE(opened->attach());
  ASSERT_TRUE(cleanupMachine(name, report));
  EXPECT_FALSE(report.removed);
  EXPECT_EQ(report.live, 1u);
  opened.reset();

  // Two processes die registered (at once, so neither takes the other's dead slot over): their slots
  // stay Active until reaped.
  Gate registered, go;
  std::vector<pid_t> children;
  for (int i = 0; i < 2; ++i) {
    children.push_back(forkChild([&] {
      go.closeWriter();
      std::unique_ptr<Registry> registry;
      if (!Registry::open(spec, {}, registry) || !registry->reserve(0, kMiB)) return 1;
      registered.open();
      (void)go.wait();  // returns once the parent closes its writer (end of file)
      _exit(0);
    }));
  }
  ASSERT_TRUE(registered.wait());
  ASSERT_TRUE(registered.wait());
  go.closeWriter();
  for (pid_t c : children) ASSERT_EQ(waitChild(c), 0);
  ASSERT_TRUE(cleanupMachine(name, report));
  EXPECT_EQ(report.reaped, 2u);
  EXPECT_EQ(report.live, 0u);
  EXPECT_TRUE(report.removed);
  EXPECT_FALSE(objectExists(spec));
  EXPECT_EQ(cleanupMachine(name, report).code, Code::NotFound);
}

TEST(RegistryCleanup, ForkedChildHoldsItsOwnOpenerLock) {
  const MachineSpec spec = uniqueMachine();
  const std::string name = spec.objectName(geteuid());
  auto parent = openOrFail(spec);
  ASSERT_TRUE(parent->attach());
  Gate registered, done;
  const pid_t child = forkChild([&] {
    // The fork handler closed our copy of the parent's descriptor; using the registry reopens it.
    if (!parent->attach()) return 1;
    registered.open();
    return done.wait() ? 0 : 2;
  });
  KillOnExit guard{child};
  ASSERT_TRUE(registered.wait());
  parent.reset();  // the parent lets go; the child still uses the object
  EXPECT_EQ(removeIfUnused(name).code, Code::Busy);
  done.open();
  EXPECT_EQ(waitChild(child), 0);
  EXPECT_TRUE(removeIfUnused(name));
}

// Children register (open, attach, reserve) while the parent runs cleanups in a loop. Each child then
// checks that the object on disk is the one it registered in (a fresh reader lists it), and it exits
// with its slot still held, so some cleanups find dead slots to reap.
TEST(RegistryCleanup, NeverRemovesUnderARegisteringProcess) {
  const MachineSpec spec = uniqueMachine();
  const std::string name = spec.objectName(geteuid());
  constexpr int kChildren = 32;
  constexpr int kRounds = 6;
  for (int round = 0; round < kRounds; ++round) {
    std::vector<pid_t> children;
    Gate go;
    for (int i = 0; i < kChildren; ++i) {
      children.push_back(forkChild([&] {
        go.closeWriter();
        (void)go.wait();  // every child goes at once when the parent closes its writer
        usleep(static_cast<useconds_t>((getpid() % 8) * 500));  // spread the registrations over the cleanups
        std::unique_ptr<Registry> registry;
        if (!Registry::open(spec, {}, registry)) return 1;
        usleep(2000);  // opened, not registered yet: the window a cleanup must not use
        if (!registry->reserve(0, kMiB)) return 1;
        std::unique_ptr<Registry> reader;
        if (!Registry::openReadOnly(name, reader)) return 2;  // our object was removed under us
        for (const ProcessRecord& r : reader->processes())
          if (r.pid == static_cast<uint32_t>(getpid())) _exit(0);  // dies registered: a slot to reap
        return 2;  // the object on disk is another one: ours was unlinked
      }));
    }
    std::atomic<bool> stop{false};
    std::atomic<uint32_t> reaped{0}, removed{0};
    std::thread cleaner([&] {
      while (!stop.load()) {
        CleanupReport report;
        const Status s = cleanupMachine(name, report);
        if (s || s.code == Code::NotFound) {
          reaped += report.reaped;
          removed += report.removed ? 1 : 0;
        } else {
          ADD_FAILURE() << s.message;
        }
      }
    });
    go.closeWriter();
    for (pid_t c : children) EXPECT_EQ(waitChild(c), 0);
    stop.store(true);
    cleaner.join();
    CleanupReport last;
    const Status s = cleanupMachine(name, last);
    EXPECT_TRUE(s || s.code == Code::NotFound) << s.message;
    EXPECT_FALSE(objectExists(spec));
    EXPECT_GT(reaped.load() + last.reaped + removed.load(), 0u);
  }
}

std::atomic<int> gServed{0};

RequestResult writeHello(RequestOp op, const char* path) {
  FILE* f = std::fopen(path, "w");
  if (f == nullptr) return RequestResult::Failed;
  std::fprintf(f, "hello %u from %d\n", static_cast<unsigned>(op), static_cast<int>(getpid()));
  std::fclose(f);
  gServed.fetch_add(1);
  return RequestResult::Done;
}

// Waits for the ack of token in slot and takes it, as a tool does; the ack word, or 0 after 10 s.
uint64_t awaitAck(Registry& tool, uint32_t slot, uint32_t token) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    const uint64_t ack = tool.acknowledged(slot);
    if (requestToken(ack) == token) {
      tool.takeAcknowledgement(slot, ack);
      return ack;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return 0;
}

// Posts request to slot of registry and waits for its ack.
uint64_t ask(Registry& tool, uint32_t slot, RequestOp op, uint32_t token) {
  EXPECT_TRUE(tool.postRequest(slot, makeRequest(op, token)));
  return awaitAck(tool, slot, token);
}

// A handler that holds the watcher inside the request until released (gHold), like a process writing a
// large snapshot while its tool gives up.
std::atomic<bool> gHold{false};
std::atomic<int> gEntered{0};
std::atomic<int> gLeft{0};

RequestResult writeHelloWhenReleased(RequestOp op, const char* path) {
  gEntered.fetch_add(1);
  while (gHold.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const RequestResult result = writeHello(op, path);
  gLeft.fetch_add(1);
  return result;
}

bool awaitEntered(int count) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (gEntered.load() < count) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

bool fileExists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(RegistryRequests, WatcherServesInThisProcessAndInAForkedChild) {
  const MachineSpec spec = uniqueMachine();
  const std::string name = spec.objectName(geteuid());
  setRequestHandler(nullptr);
  auto owner = openOrFail(spec);
  ASSERT_TRUE(owner->attach());
  const uint32_t mine = static_cast<uint32_t>(owner->slot());
  std::unique_ptr<Registry> tool;
  ASSERT_TRUE(Registry::openExisting(name, tool));

  // No handler: answered, not served.
  uint64_t ack = ask(*tool, mine, RequestOp::SnapshotPickle, 7);
  EXPECT_EQ(ack, makeAck(RequestResult::NotSupported, 7));
  EXPECT_EQ(owner->pendingRequest(), 0u);

  setRequestHandler(&writeHello);
  ack = ask(*tool, mine, RequestOp::SnapshotJson, 8);
  ASSERT_EQ(ack, makeAck(RequestResult::Done, 8));
  std::string dir;
  ASSERT_TRUE(requestDirectory(geteuid(), false, dir));
  const std::string file = requestFile(dir, mine, 8, RequestOp::SnapshotJson);
  EXPECT_EQ(readFile(file), "hello 2 from " + std::to_string(getpid()) + "\n");
  struct stat st;
  ASSERT_EQ(stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  unlink(file.c_str());

  // A forked child has no watcher until it registers; then its own thread answers for its slot.
  Gate registered, done;
  int slotPipe[2];
  ASSERT_EQ(pipe(slotPipe), 0);
  const pid_t child = forkChild([&] {
    if (!owner->attach()) return 1;
    const int32_t slot = owner->slot();
    if (write(slotPipe[1], &slot, sizeof slot) != sizeof slot) return 2;
    registered.open();
    return done.wait() ? 0 : 3;
  });
  KillOnExit guard{child};
  ASSERT_TRUE(registered.wait());
  int32_t childSlot = -1;
  ASSERT_EQ(read(slotPipe[0], &childSlot, sizeof childSlot), static_cast<ssize_t>(sizeof childSlot));
  close(slotPipe[0]);
  close(slotPipe[1]);
  ASSERT_GE(childSlot, 0);
  ASSERT_NE(static_cast<uint32_t>(childSlot), mine);
  ack = ask(*tool, static_cast<uint32_t>(childSlot), RequestOp::SnapshotPickle, 9);
  ASSERT_EQ(ack, makeAck(RequestResult::Done, 9));
  const std::string childFile = requestFile(dir, static_cast<uint32_t>(childSlot), 9, RequestOp::SnapshotPickle);
  EXPECT_EQ(readFile(childFile), "hello 1 from " + std::to_string(child) + "\n");
  unlink(childFile.c_str());
  done.open();
  EXPECT_EQ(waitChild(child), 0);

  // A dead owner's slot takes no request.
  EXPECT_EQ(tool->postRequest(static_cast<uint32_t>(childSlot), makeRequest(RequestOp::SnapshotPickle, 10)).code,
            Code::NotFound);
  setRequestHandler(nullptr);
  owner.reset();  // joins the watcher
  tool.reset();
  EXPECT_TRUE(removeIfUnused(name));
}

TEST(RegistryRequests, OneRequestAtATimeAndWithdrawnOnesLeaveNoFile) {
  const MachineSpec spec = uniqueMachine();
  const std::string name = spec.objectName(geteuid());
  auto owner = openOrFail(spec);
  ASSERT_TRUE(owner->attach());
  const uint32_t mine = static_cast<uint32_t>(owner->slot());
  std::unique_ptr<Registry> tool;
  ASSERT_TRUE(Registry::openExisting(name, tool));
  std::string dir;
  ASSERT_TRUE(requestDirectory(geteuid(), true, dir));
  setRequestHandler(&writeHelloWhenReleased);
  // Whatever fails below, the watcher is let go (else joining it in ~Registry would hang the test).
  struct Release {
    ~Release() {
      gHold = false;
      setRequestHandler(nullptr);
    }
  } release;

  // The tool gives up while the owner writes: the owner removes what it wrote and answers nobody.
  gHold = true;
  gEntered = 0;
  gLeft = 0;
  const uint64_t first = makeRequest(RequestOp::SnapshotPickle, 21);
  ASSERT_TRUE(tool->postRequest(mine, first));
  ASSERT_TRUE(awaitEntered(1));
  EXPECT_TRUE(tool->withdrawRequest(mine, first));
  EXPECT_FALSE(tool->withdrawRequest(mine, first));  // once
  gHold = false;
  const std::string dropped = requestFile(dir, mine, 21, RequestOp::SnapshotPickle);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while ((gLeft.load() == 0 || fileExists(dropped)) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(gLeft.load(), 1);
  EXPECT_FALSE(fileExists(dropped));
  EXPECT_NE(requestToken(tool->acknowledged(mine)), 21u);

  // Answered: too late to withdraw, and the file is the tool's to take.
  const uint64_t served = makeRequest(RequestOp::SnapshotJson, 22);
  EXPECT_EQ(ask(*tool, mine, RequestOp::SnapshotJson, 22), makeAck(RequestResult::Done, 22));
  EXPECT_FALSE(tool->withdrawRequest(mine, served));
  const std::string kept = requestFile(dir, mine, 22, RequestOp::SnapshotJson);
  EXPECT_TRUE(fileExists(kept));
  unlink(kept.c_str());

  // A second tool waits while a request is pending: its post is refused (Busy), never replaces it.
  gHold = true;
  gEntered = 0;
  ASSERT_TRUE(tool->postRequest(mine, makeRequest(RequestOp::SnapshotPickle, 23)));
  ASSERT_TRUE(awaitEntered(1));
  EXPECT_EQ(tool->postRequest(mine, makeRequest(RequestOp::SnapshotPickle, 24)).code, Code::Busy);
  gHold = false;
  EXPECT_EQ(awaitAck(*tool, mine, 23), makeAck(RequestResult::Done, 23));
  const std::string firstServed = requestFile(dir, mine, 23, RequestOp::SnapshotPickle);
  EXPECT_TRUE(fileExists(firstServed));
  unlink(firstServed.c_str());

  // Withdrawn while served, and another tool posts meanwhile: the withdrawn file goes, the new request
  // is served after it.
  gHold = true;
  gEntered = 0;
  const uint64_t abandoned = makeRequest(RequestOp::SnapshotJson, 25);
  ASSERT_TRUE(tool->postRequest(mine, abandoned));
  ASSERT_TRUE(awaitEntered(1));
  ASSERT_TRUE(tool->withdrawRequest(mine, abandoned));
  ASSERT_TRUE(tool->postRequest(mine, makeRequest(RequestOp::SnapshotPickle, 26)));
  gHold = false;
  EXPECT_EQ(awaitAck(*tool, mine, 26), makeAck(RequestResult::Done, 26));
  EXPECT_FALSE(fileExists(requestFile(dir, mine, 25, RequestOp::SnapshotJson)));
  const std::string next = requestFile(dir, mine, 26, RequestOp::SnapshotPickle);
  EXPECT_TRUE(fileExists(next));
  unlink(next.c_str());

  // Answers that follow each other closely: the second waits until the first tool took its answer, so
  // neither is overwritten unseen.
  const uint64_t early = makeRequest(RequestOp::SnapshotPickle, 27);
  ASSERT_TRUE(tool->postRequest(mine, early));
  const auto served27 = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (requestToken(tool->acknowledged(mine)) != 27 && std::chrono::steady_clock::now() < served27)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(tool->acknowledged(mine), makeAck(RequestResult::Done, 27));
  ASSERT_TRUE(tool->postRequest(mine, makeRequest(RequestOp::SnapshotJson, 28)));  // served at once
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(tool->acknowledged(mine), makeAck(RequestResult::Done, 27));  // not yet taken: still there
  tool->takeAcknowledgement(mine, makeAck(RequestResult::Done, 27));
  EXPECT_EQ(awaitAck(*tool, mine, 28), makeAck(RequestResult::Done, 28));
  for (const std::string& f : {requestFile(dir, mine, 27, RequestOp::SnapshotPickle),
                               requestFile(dir, mine, 28, RequestOp::SnapshotJson)}) {
    EXPECT_TRUE(fileExists(f)) << f;
    unlink(f.c_str());
  }

  owner.reset();
  tool.reset();
  EXPECT_TRUE(removeIfUnused(name));
}

}  // namespace
}  // namespace mtia::registry::test
