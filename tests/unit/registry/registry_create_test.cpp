// Creating and opening the registry object: reference/smi-topology-ipc.md
// section 4.10 cases 2 (creator killed at each init step), 3 (garbage and
// stale objects, among them an older layout version), 12 (a file size limit) and
// 13 (stale registry after every process died).
#include "registry_test_util.hpp"

#include "platform/registry/shared_object.hpp"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace mtia::registry::test {
namespace {

std::string objectPath(const MachineSpec& spec) {
    return registry::objectPath(spec.objectName(geteuid()));
}

// Every open below must come back; a spin like Boost's managed_open_or_create would trip this.
struct Watchdog {
    Watchdog() { alarm(60); }
    ~Watchdog() { alarm(0); }
};

TEST(RegistryCreate, CreatesOnceWithMode0600AndSpaceReserved) {
    const MachineSpec spec = uniqueMachine();
    auto first = openOrFail(spec);
    ASSERT_TRUE(first);
    EXPECT_TRUE(first->created());
    auto second = openOrFail(spec);
    ASSERT_TRUE(second);
    EXPECT_FALSE(second->created());
    EXPECT_EQ(second->deviceCount(), 2u);
    EXPECT_EQ(second->capacity(1), 64 * kMiB);
    EXPECT_EQ(second->machine(), spec.description());

    struct stat st;
    ASSERT_EQ(stat(objectPath(spec).c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0600u);
    EXPECT_EQ(st.st_uid, geteuid());
    EXPECT_EQ(static_cast<uint64_t>(st.st_size), objectBytes(kDefaultSlots));
    // posix_fallocate gave the object its pages now: a full /dev/shm fails at creation, not later.
    EXPECT_GE(static_cast<uint64_t>(st.st_blocks) * 512, objectBytes(kDefaultSlots));
    ASSERT_EQ(stat(lockPath(spec.objectName(geteuid())).c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0600u);
    first.reset();
    second.reset();
    removeMachine(spec);
}

TEST(RegistryCreate, NameCarriesLayoutUserAndConfiguration) {
    MachineSpec a = uniqueMachine();
    MachineSpec b = a;
    b.memoryBytes *= 2;
    const std::string name = a.objectName(geteuid());
    EXPECT_EQ(name.rfind(objectPrefix(geteuid()), 0), 0u);
    EXPECT_NE(
        name.find(".v" + std::to_string(kLayoutVersion) + ".u" + std::to_string(geteuid()) + "."),
        std::string::npos);
    EXPECT_NE(name, b.objectName(geteuid()));
    EXPECT_EQ(name, MachineSpec(a).objectName(geteuid()));
    MachineSpec odd = a;
    odd.name = "has spaces/and slashes";
    EXPECT_EQ(odd.objectName(geteuid()).find_first_of(" /"), std::string::npos);

    auto ra = openOrFail(a);
    auto rb = openOrFail(b);
    const std::vector<std::string> machines = listMachines(geteuid());
    EXPECT_NE(std::find(machines.begin(), machines.end(), name), machines.end());
    EXPECT_NE(std::find(machines.begin(), machines.end(), b.objectName(geteuid())), machines.end());
    for (const std::string& m : machines) EXPECT_EQ(m.find(".lock"), std::string::npos) << m;
    ra.reset();
    rb.reset();
    removeMachine(a);
    removeMachine(b);
}

class CreatorKilled : public ::testing::TestWithParam<testing::Point> {};

TEST_P(CreatorKilled, NextOpenRecreatesWithoutSpinning) {
    Watchdog watchdog;
    const MachineSpec spec = uniqueMachine();
    const testing::Point point = GetParam();
    const pid_t child = forkChild([&] {
        killSelfAt(point);
        std::unique_ptr<Registry> registry;
        (void)Registry::open(spec, {}, registry);
        return 1;  // not reached: the hook kills us half-way
    });
    ASSERT_EQ(waitChild(child), 128 + SIGKILL);

    // A reader never creates and never waits for the dead creator: it reports the object unusable.
    std::unique_ptr<Registry> reader;
    const Status ro = Registry::openReadOnly(spec.objectName(geteuid()), reader);
    EXPECT_EQ(ro.code, Code::Unavailable) << ro.message;

    std::unique_ptr<Registry> registry;
    const Status rw = Registry::open(spec, {}, registry);
    ASSERT_TRUE(rw) << rw.message;
    EXPECT_TRUE(registry->recreated());
    ASSERT_TRUE(registry->reserve(0, 2 * kMiB));
    EXPECT_EQ(registry->used(0), 2 * kMiB);
    registry.reset();
    removeMachine(spec);
}

INSTANTIATE_TEST_SUITE_P(EachInitStep, CreatorKilled,
                         ::testing::Values(testing::Point::AfterTruncate,
                                           testing::Point::AfterInitializing,
                                           testing::Point::BeforeReady));

struct Garbage {
    const char* what;
    std::function<void(const MachineSpec&)> make;
};

void expectReplaced(const MachineSpec& spec, const char* what) {
    std::unique_ptr<Registry> reader;
    const Status ro = Registry::openReadOnly(spec.objectName(geteuid()), reader);
    EXPECT_EQ(ro.code, Code::Unavailable) << what << ": " << ro.message;
    std::unique_ptr<Registry> registry;
    const Status rw = Registry::open(spec, {}, registry);
    ASSERT_TRUE(rw) << what << ": " << rw.message;
    EXPECT_TRUE(registry->recreated()) << what;
    EXPECT_TRUE(registry->reserve(1, 4 * kMiB)) << what;
}

TEST(RegistryCreate, GarbageOfOursIsReplaced) {
    Watchdog watchdog;
    const std::vector<Garbage> cases = {
        {"zero-size object", [](const MachineSpec& s) { writeObject(s, ""); }},
        {"all-zero header",
         [](const MachineSpec& s) {
             writeObject(s, std::string(objectBytes(kDefaultSlots), '\0'));
         }},
        {"wrong magic",
         [](const MachineSpec& s) {
             openOrFail(s).reset();
             editObject(s,
                        [](char* bytes, size_t) { reinterpret_cast<Header*>(bytes)->magic ^= 1; });
         }},
        {"older layout version",
         [](const MachineSpec& s) {
             openOrFail(s).reset();
             editObject(s, [](char* bytes, size_t) {
                 reinterpret_cast<Header*>(bytes)->layoutVersion = kLayoutVersion - 1;
             });
         }},
        {"wrong recorded size",
         [](const MachineSpec& s) {
             openOrFail(s).reset();
             editObject(s, [](char* bytes, size_t) {
                 reinterpret_cast<Header*>(bytes)->totalBytes += 4096;
             });
         }},
        {"truncated object",
         [](const MachineSpec& s) {
             openOrFail(s).reset();
             std::string head(kHeaderBytes * 2, '\0');
             editObject(s,
                        [&](char* bytes, size_t) { std::memcpy(head.data(), bytes, head.size()); });
             writeObject(s, head);
         }},
        {"stuck initializing",
         [](const MachineSpec& s) {
             openOrFail(s).reset();
             editObject(s, [](char* bytes, size_t) {
                 reinterpret_cast<Header*>(bytes)->state.store(
                     static_cast<uint32_t>(ObjectState::Initializing));
             });
         }},
        {"poisoned",
         [](const MachineSpec& s) {
             openOrFail(s).reset();
             editObject(s, [](char* bytes, size_t) {
                 reinterpret_cast<Header*>(bytes)->state.store(
                     static_cast<uint32_t>(ObjectState::Poisoned));
             });
         }},
    };
    for (const Garbage& g : cases) {
        const MachineSpec spec = uniqueMachine();
        g.make(spec);
        expectReplaced(spec, g.what);
        removeMachine(spec);
    }
}

TEST(RegistryCreate, FileSizeLimitIsReportedAsSuchNotAsFullMemory) {
    // A file size limit (RLIMIT_FSIZE, ulimit -f) below the object's size is no shortage of memory:
    // the error says which file could not be sized and why, and no SIGXFSZ (whose default action
    // kills the process) is raised on the way.
    const MachineSpec spec = uniqueMachine();
    const pid_t child = forkChild([&] {
        rlimit limit{64 * 1024, 64 * 1024};
        if (setrlimit(RLIMIT_FSIZE, &limit) != 0) return 3;
        std::unique_ptr<Registry> registry;
        const Status status = Registry::open(spec, {}, registry);
        if (status || status.code == Code::NoSpace) return 1;
        if (status.message.find(spec.objectName(geteuid())) == std::string::npos) return 2;
        if (status.message.find("RLIMIT_FSIZE") == std::string::npos) return 4;
        return status.message.find("65536") != std::string::npos ? 0 : 5;
    });
    EXPECT_EQ(waitChild(child), 0);
    // The kernel's own refusal (SIGXFSZ ignored, so ftruncate fails with EFBIG) reads the same way.
    const pid_t ignoring = forkChild([&] {
        signal(SIGXFSZ, SIG_IGN);
        rlimit limit{64 * 1024, 64 * 1024};
        if (setrlimit(RLIMIT_FSIZE, &limit) != 0) return 3;
        std::unique_ptr<Registry> registry;
        const Status status = Registry::open(spec, {}, registry);
        if (status || status.code == Code::NoSpace) return 1;
        return status.message.find(spec.objectName(geteuid())) != std::string::npos ? 0 : 2;
    });
    EXPECT_EQ(waitChild(ignoring), 0);
    // Nothing half-made is left behind: the next open creates a good registry.
    std::unique_ptr<Registry> registry;
    const Status status = Registry::open(spec, {}, registry);
    ASSERT_TRUE(status) << status.message;
    EXPECT_TRUE(registry->created());
    registry.reset();
    removeMachine(spec);
}

TEST(RegistryCreate, StaleRegistryAfterEveryoneDied) {
    const MachineSpec spec = uniqueMachine();
    for (int i = 0; i < 3; ++i) {
        const pid_t child = forkChild([&] {
            std::unique_ptr<Registry> registry;
            if (!Registry::open(spec, {}, registry)) return 1;
            if (!registry->reserve(0, 4 * kMiB)) return 2;
            _exit(0);  // no destructor: the slot stays Active with its figures, as after a crash
        });
        ASSERT_EQ(waitChild(child), 0);
    }
    const std::string name = spec.objectName(geteuid());
    std::unique_ptr<Registry> reader;
    ASSERT_TRUE(Registry::openReadOnly(name, reader));
    EXPECT_TRUE(reader->processes().empty());
    EXPECT_EQ(reader->used(0), 0u);

    // Not while someone lives.
    auto live = openOrFail(spec);
    ASSERT_TRUE(live->attach());
    EXPECT_FALSE(removeIfUnused(name));
    live.reset();

    reader.reset();
    const Status removed = removeIfUnused(name);
    EXPECT_TRUE(removed) << removed.message;
    const std::vector<std::string> machines = listMachines(geteuid());
    EXPECT_EQ(std::find(machines.begin(), machines.end(), name), machines.end());
    EXPECT_EQ(Registry::openReadOnly(name, reader).code, Code::NotFound);
    EXPECT_NE(access(lockPath(name).c_str(), F_OK), 0);
}

}  // namespace
}  // namespace mtia::registry::test
