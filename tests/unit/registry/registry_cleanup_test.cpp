// Cleanup and requests: removeIfUnused / cleanupMachine never pull a registry
// from under a live process (one that only opened it included, and one
// registering while cleanups run in a loop), reap dead slots, and remove what
// nobody uses; the request watcher serves a tool's request through the
// request word (in a forked child that registered anew too), answers
// NotSupported without a handler, and is joined when the slot is given up;
// request files are mode 0600, written under a temporary name, and nothing of
// a request whose tool or owner was killed outlives the owner or a cleanup.
#include "registry_test_util.hpp"

#include "platform/registry/cleanup.hpp"
#include "platform/registry/requests.hpp"
#include "platform/registry/shared_object.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <dirent.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

namespace mtia::registry::test {
namespace {

bool objectExists(const MachineSpec& spec) {
    const std::string name = spec.objectName(geteuid());
    return access(objectPath(name).c_str(), F_OK) == 0 && access(lockPath(name).c_str(), F_OK) == 0;
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

    // Two processes die registered (at once, so neither takes the other's dead slot over): their
    // slots stay Active until reaped.
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
        // The fork handler closed our copy of the parent's descriptor; using the registry reopens
        // it.
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

// Children register (open, attach, reserve) while the parent runs cleanups in a loop. Each child
// then checks that the object on disk is the one it registered in (a fresh reader lists it), and it
// exits with its slot still held, so some cleanups find dead slots to reap.
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
                usleep(static_cast<useconds_t>((getpid() % 8) *
                                               500));  // spread the registrations over the cleanups
                std::unique_ptr<Registry> registry;
                if (!Registry::open(spec, {}, registry)) return 1;
                usleep(2000);  // opened, not registered yet: the window a cleanup must not use
                if (!registry->reserve(0, kMiB)) return 1;
                std::unique_ptr<Registry> reader;
                if (!Registry::openReadOnly(name, reader))
                    return 2;  // our object was removed under us
                for (const ProcessRecord& r : reader->processes())
                    if (r.pid == static_cast<uint32_t>(getpid()))
                        _exit(0);  // dies registered: a slot to reap
                return 2;          // the object on disk is another one: ours was unlinked
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

// A handler that holds the watcher inside the request until released (gHold), like a process
// writing a large snapshot while its tool gives up.
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

bool fileExists(const std::string& path) {
    return access(path.c_str(), F_OK) == 0;
}

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
    const std::string file = requestFile(dir, name, mine, 8, RequestOp::SnapshotJson);
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
    ASSERT_EQ(read(slotPipe[0], &childSlot, sizeof childSlot),
              static_cast<ssize_t>(sizeof childSlot));
    close(slotPipe[0]);
    close(slotPipe[1]);
    ASSERT_GE(childSlot, 0);
    ASSERT_NE(static_cast<uint32_t>(childSlot), mine);
    ack = ask(*tool, static_cast<uint32_t>(childSlot), RequestOp::SnapshotPickle, 9);
    ASSERT_EQ(ack, makeAck(RequestResult::Done, 9));
    const std::string childFile =
        requestFile(dir, name, static_cast<uint32_t>(childSlot), 9, RequestOp::SnapshotPickle);
    EXPECT_EQ(readFile(childFile), "hello 1 from " + std::to_string(child) + "\n");
    unlink(childFile.c_str());
    done.open();
    EXPECT_EQ(waitChild(child), 0);

    // A dead owner's slot takes no request.
    EXPECT_EQ(tool->postRequest(static_cast<uint32_t>(childSlot),
                                makeRequest(RequestOp::SnapshotPickle, 10))
                  .code,
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
    // Whatever fails below, the watcher is let go (else joining it in ~Registry would hang the
    // test).
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
    const std::string dropped = requestFile(dir, name, mine, 21, RequestOp::SnapshotPickle);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while ((gLeft.load() == 0 || fileExists(dropped)) &&
           std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_EQ(gLeft.load(), 1);
    EXPECT_FALSE(fileExists(dropped));
    EXPECT_NE(requestToken(tool->acknowledged(mine)), 21u);

    // Answered: too late to withdraw, and the file is the tool's to take.
    const uint64_t served = makeRequest(RequestOp::SnapshotJson, 22);
    EXPECT_EQ(ask(*tool, mine, RequestOp::SnapshotJson, 22), makeAck(RequestResult::Done, 22));
    EXPECT_FALSE(tool->withdrawRequest(mine, served));
    const std::string kept = requestFile(dir, name, mine, 22, RequestOp::SnapshotJson);
    EXPECT_TRUE(fileExists(kept));
    unlink(kept.c_str());

    // A second tool waits while a request is pending: its post is refused (Busy), never replaces
    // it.
    gHold = true;
    gEntered = 0;
    ASSERT_TRUE(tool->postRequest(mine, makeRequest(RequestOp::SnapshotPickle, 23)));
    ASSERT_TRUE(awaitEntered(1));
    EXPECT_EQ(tool->postRequest(mine, makeRequest(RequestOp::SnapshotPickle, 24)).code, Code::Busy);
    gHold = false;
    EXPECT_EQ(awaitAck(*tool, mine, 23), makeAck(RequestResult::Done, 23));
    const std::string firstServed = requestFile(dir, name, mine, 23, RequestOp::SnapshotPickle);
    EXPECT_TRUE(fileExists(firstServed));
    unlink(firstServed.c_str());

    // Withdrawn while served, and another tool posts meanwhile: the withdrawn file goes, the new
    // request is served after it.
    gHold = true;
    gEntered = 0;
    const uint64_t abandoned = makeRequest(RequestOp::SnapshotJson, 25);
    ASSERT_TRUE(tool->postRequest(mine, abandoned));
    ASSERT_TRUE(awaitEntered(1));
    ASSERT_TRUE(tool->withdrawRequest(mine, abandoned));
    ASSERT_TRUE(tool->postRequest(mine, makeRequest(RequestOp::SnapshotPickle, 26)));
    gHold = false;
    EXPECT_EQ(awaitAck(*tool, mine, 26), makeAck(RequestResult::Done, 26));
    EXPECT_FALSE(fileExists(requestFile(dir, name, mine, 25, RequestOp::SnapshotJson)));
    const std::string next = requestFile(dir, name, mine, 26, RequestOp::SnapshotPickle);
    EXPECT_TRUE(fileExists(next));
    unlink(next.c_str());

    // Answers that follow each other closely: the second waits until the first tool took its
    // answer, so neither is overwritten unseen.
    const uint64_t early = makeRequest(RequestOp::SnapshotPickle, 27);
    ASSERT_TRUE(tool->postRequest(mine, early));
    const auto served27 = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (requestToken(tool->acknowledged(mine)) != 27 &&
           std::chrono::steady_clock::now() < served27)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ASSERT_EQ(tool->acknowledged(mine), makeAck(RequestResult::Done, 27));
    ASSERT_TRUE(
        tool->postRequest(mine, makeRequest(RequestOp::SnapshotJson, 28)));  // served at once
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(tool->acknowledged(mine),
              makeAck(RequestResult::Done, 27));  // not yet taken: still there
    tool->takeAcknowledgement(mine, makeAck(RequestResult::Done, 27));
    EXPECT_EQ(awaitAck(*tool, mine, 28), makeAck(RequestResult::Done, 28));
    for (const std::string& f : {requestFile(dir, name, mine, 27, RequestOp::SnapshotPickle),
                                 requestFile(dir, name, mine, 28, RequestOp::SnapshotJson)}) {
        EXPECT_TRUE(fileExists(f)) << f;
        unlink(f.c_str());
    }

    owner.reset();
    tool.reset();
    EXPECT_TRUE(removeIfUnused(name));
}

// The names in the request directory that belong to registry name.
std::vector<std::string> requestFilesOf(const std::string& dir, const std::string& name) {
    std::vector<std::string> found;
    if (DIR* d = opendir(dir.c_str())) {
        while (const dirent* e = readdir(d))
            if (std::string(e->d_name).compare(0, name.size() + 1, name + ".") == 0)
                found.push_back(e->d_name);
        closedir(d);
    }
    return found;
}

// Waits (10 s at most) until path exists.
bool awaitFile(const std::string& path) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!fileExists(path)) {
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
}

uint32_t modeOf(const std::string& path) {
    struct stat st;
    return stat(path.c_str(), &st) == 0 ? static_cast<uint32_t>(st.st_mode & 07777) : 0;
}

// A tool in a forked child: holds token, posts it and waits to be killed, never taking the answer.
pid_t toolThatDies(const std::string& name, uint32_t slot, RequestOp op, uint32_t token,
                   Gate& posted) {
    return forkChild([&, slot, op, token] {
        std::unique_ptr<Registry> tool;
        if (!Registry::openExisting(name, tool) || !tool->holdRequest(token)) return 1;
        if (!tool->postRequest(slot, makeRequest(op, token))) return 2;
        posted.open();
        pause();
        return 0;
    });
}

TEST(RegistryRequests, AnswerOfAKilledToolGoesWhenTheOwnerLeaves) {
    const MachineSpec spec = uniqueMachine();
    const std::string name = spec.objectName(geteuid());
    setRequestHandler(&writeHello);
    struct Reset {
        ~Reset() { setRequestHandler(nullptr); }
    } reset;
    auto owner = openOrFail(spec);
    ASSERT_TRUE(owner->attach());
    const uint32_t mine = static_cast<uint32_t>(owner->slot());
    std::string dir;
    ASSERT_TRUE(requestDirectory(geteuid(), true, dir));
    Gate posted;
    const pid_t tool = toolThatDies(name, mine, RequestOp::SnapshotPickle, 41, posted);
    KillOnExit guard{tool};
    ASSERT_TRUE(posted.wait());
    const std::string answer = requestFile(dir, name, mine, 41, RequestOp::SnapshotPickle);
    ASSERT_TRUE(awaitFile(answer));
    EXPECT_EQ(modeOf(answer), 0600u);
    killChild(tool);
    // A live tool's answer stays until it takes it, whoever leaves or cleans up meanwhile.
    std::unique_ptr<Registry> waiting;
    ASSERT_TRUE(Registry::openExisting(name, waiting));
    ASSERT_TRUE(waiting->holdRequest(42));
    ASSERT_TRUE(waiting->postRequest(mine, makeRequest(RequestOp::SnapshotJson, 42)));
    EXPECT_EQ(awaitAck(*waiting, mine, 42), makeAck(RequestResult::Done, 42));
    const std::string kept = requestFile(dir, name, mine, 42, RequestOp::SnapshotJson);
    owner.reset();  // the owner gives its slot up: what nobody waits for goes
    EXPECT_FALSE(fileExists(answer));
    EXPECT_TRUE(fileExists(kept));
    waiting->releaseRequest(42);
    waiting.reset();
    CleanupReport report;
    EXPECT_TRUE(cleanupMachine(name, report));
    EXPECT_TRUE(report.removed);
    EXPECT_TRUE(requestFilesOf(dir, name).empty());
}

Registry* gKeptAtExit = nullptr;

TEST(RegistryRequests, AnswerOfAKilledToolGoesAtTheOwnersExit) {
    const MachineSpec spec = uniqueMachine();
    const std::string name = spec.objectName(geteuid());
    setRequestHandler(&writeHello);
    struct Reset {
        ~Reset() { setRequestHandler(nullptr); }
    } reset;
    std::string dir;
    ASSERT_TRUE(requestDirectory(geteuid(), true, dir));
    // The owner exits (exit(), not a destructor: the runtime never destroys its registry) after the
    // tool that asked it was killed.
    Gate registered, answered;
    int slotPipe[2];
    ASSERT_EQ(pipe(slotPipe), 0);
    const pid_t owner = forkChild([&] {
        std::unique_ptr<Registry> registry;
        if (!Registry::open(spec, {}, registry) || !registry->attach()) return 1;
        const int32_t slot = registry->slot();
        if (write(slotPipe[1], &slot, sizeof slot) != sizeof slot) return 2;
        registered.open();
        if (!answered.wait()) return 3;
        gKeptAtExit =
            registry.release();  // never destroyed, as the runtime's is (reachable: no leak report)
        std::exit(0);
    });
    KillOnExit ownerGuard{owner};
    ASSERT_TRUE(registered.wait());
    int32_t slot = -1;
    ASSERT_EQ(read(slotPipe[0], &slot, sizeof slot), static_cast<ssize_t>(sizeof slot));
    close(slotPipe[0]);
    close(slotPipe[1]);
    Gate posted;
    const pid_t tool =
        toolThatDies(name, static_cast<uint32_t>(slot), RequestOp::SnapshotJson, 43, posted);
    KillOnExit toolGuard{tool};
    ASSERT_TRUE(posted.wait());
    const std::string answer =
        requestFile(dir, name, static_cast<uint32_t>(slot), 43, RequestOp::SnapshotJson);
    ASSERT_TRUE(awaitFile(answer));
    killChild(tool);
    answered.open();
    EXPECT_EQ(waitChild(owner), 0);
    EXPECT_FALSE(fileExists(answer));
    CleanupReport report;
    EXPECT_TRUE(cleanupMachine(name, report));
    EXPECT_TRUE(requestFilesOf(dir, name).empty());
}

// A handler that writes half a file and then never returns (its process is killed while writing).
std::atomic<bool> gHalfWritten{false};
RequestResult writeHalfAndHang(RequestOp, const char* path) {
    FILE* f = std::fopen(path, "w");
    if (f == nullptr) return RequestResult::Failed;
    std::fputs("half", f);
    std::fflush(f);
    for (;;) pause();
}

TEST(RegistryRequests, OwnerKilledWhileWritingLeavesNothingAfterCleanup) {
    const MachineSpec spec = uniqueMachine();
    const std::string name = spec.objectName(geteuid());
    setRequestHandler(&writeHalfAndHang);
    struct Reset {
        ~Reset() { setRequestHandler(nullptr); }
    } reset;
    std::string dir;
    ASSERT_TRUE(requestDirectory(geteuid(), true, dir));
    Gate registered;
    const pid_t owner = forkChild([&] {
        std::unique_ptr<Registry> registry;
        if (!Registry::open(spec, {}, registry) || !registry->attach()) return 1;
        registered.open();
        for (;;) pause();
    });
    KillOnExit ownerGuard{owner};
    ASSERT_TRUE(registered.wait());
    std::unique_ptr<Registry> tool;
    ASSERT_TRUE(Registry::openExisting(name, tool));
    const auto processes = tool->processes();
    ASSERT_EQ(processes.size(), 1u);
    const uint32_t slot = processes[0].slot;
    ASSERT_TRUE(tool->holdRequest(44));
    ASSERT_TRUE(tool->postRequest(slot, makeRequest(RequestOp::SnapshotPickle, 44)));
    const std::string temp = requestTempFile(dir, name, slot, 44, RequestOp::SnapshotPickle);
    ASSERT_TRUE(awaitFile(temp));
    // Private from its first byte, and never under the name a tool takes.
    EXPECT_EQ(modeOf(temp), 0600u);
    EXPECT_FALSE(fileExists(requestFile(dir, name, slot, 44, RequestOp::SnapshotPickle)));
    killChild(owner);
    // While the tool still waits, a cleanup leaves its request alone.
    CleanupReport report;
    ASSERT_TRUE(cleanupMachine(name, report));
    EXPECT_TRUE(fileExists(temp));
    tool->releaseRequest(44);  // the tool gives up (or dies): nobody waits for the file any more
    ASSERT_TRUE(cleanupMachine(name, report));
    EXPECT_FALSE(fileExists(temp));
    tool.reset();
    ASSERT_TRUE(cleanupMachine(name, report));
    EXPECT_TRUE(report.removed);
    EXPECT_TRUE(requestFilesOf(dir, name).empty());
}

}  // namespace
}  // namespace mtia::registry::test
