// Who may open a registry: reference/smi-topology-ipc.md section 4.10 case 4.
// The object and its lock file must be the caller's own, mode 0600, and no
// link; another user can neither read the registry nor see it listed.
#include "registry_test_util.hpp"

#include "platform/registry/test_hooks.hpp"
#include "platform/registry/user_directory.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>

namespace mtia::registry::test {
namespace {

constexpr uid_t kNobody = 65534;

std::string objectPath(const MachineSpec& spec) {
    return registry::objectPath(spec.objectName(geteuid()));
}

TEST(RegistryPermission, GroupReadableObjectIsRefused) {
    const MachineSpec spec = uniqueMachine();
    openOrFail(spec).reset();
    ASSERT_EQ(chmod(objectPath(spec).c_str(), 0644), 0);
    std::unique_ptr<Registry> registry;
    const Status rw = Registry::open(spec, {}, registry);
    EXPECT_EQ(rw.code, Code::Permission);
    EXPECT_NE(rw.message.find("0644"), std::string::npos) << rw.message;
    EXPECT_EQ(Registry::openReadOnly(spec.objectName(geteuid()), registry).code, Code::Permission);
    removeMachine(spec);
}

TEST(RegistryPermission, GroupReadableOrLinkedLockFileIsRefused) {
    const MachineSpec spec = uniqueMachine();
    openOrFail(spec).reset();
    const std::string lock = lockPath(spec.objectName(geteuid()));
    ASSERT_EQ(chmod(lock.c_str(), 0660), 0);
    std::unique_ptr<Registry> registry;
    EXPECT_EQ(Registry::open(spec, {}, registry).code, Code::Permission);
    ASSERT_EQ(unlink(lock.c_str()), 0);
    const std::string target = lock + ".target";
    const int fd = open(target.c_str(), O_CREAT | O_RDWR, 0600);
    ASSERT_GE(fd, 0);
    close(fd);
    ASSERT_EQ(symlink(target.c_str(), lock.c_str()), 0);
    EXPECT_EQ(Registry::open(spec, {}, registry).code, Code::Permission);
    unlink(target.c_str());
    removeMachine(spec);
}

TEST(RegistryPermission, ObjectOfAnotherOwnerIsRefused) {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to give a file to another user (chown)";
    // Only we (and root) can create files in our private directory; an object of another owner
    // there means root put it there: still never trusted.
    const MachineSpec spec = uniqueMachine();
    const std::string name = spec.objectName(geteuid());
    UserDirectory dir;
    ASSERT_TRUE(userDirectory(geteuid(), true, dir));
    const int fd =
        open(registry::objectPath(dir.path, name).c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(ftruncate(fd, static_cast<off_t>(objectBytes(kDefaultSlots))), 0);
    ASSERT_EQ(fchown(fd, kNobody, kNobody), 0);
    close(fd);
    std::unique_ptr<Registry> registry;
    const Status status = Registry::open(spec, {}, registry);
    EXPECT_EQ(status.code, Code::Permission);
    EXPECT_NE(status.message.find("belongs to uid 65534"), std::string::npos) << status.message;
    removeMachine(spec);
}

// The object is opened and checked on a descriptor, then mapped by Boost.Interprocess, which opens
// the path again: the file it maps must be the checked one. A file renamed over the object in
// between (here by a test hook; only the user or root can, the directory being private) is refused.
std::string gReplacement;
std::string gTarget;

void replaceBeforeMap(testing::Point point) {
    if (point != testing::Point::BeforeMap || gReplacement.empty()) return;
    if (std::rename(gReplacement.c_str(), gTarget.c_str()) != 0) std::abort();
    gReplacement.clear();
}

TEST(RegistryPermission, ObjectReplacedBeforeMappingIsRefused) {
    const MachineSpec spec = uniqueMachine();
    openOrFail(spec).reset();
    gTarget = objectPath(spec);
    gReplacement = gTarget + ".other";
    // A byte-for-byte copy, of the same owner and mode: only the inode tells it apart.
    std::string bytes;
    editObject(spec, [&](char* data, size_t size) { bytes.assign(data, size); });
    const int fd = open(gReplacement.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    close(fd);
    testing::setHook(replaceBeforeMap);
    std::unique_ptr<Registry> reader;
    const Status ro = Registry::openReadOnly(spec.objectName(geteuid()), reader);
    testing::setHook(nullptr);
    EXPECT_TRUE(gReplacement.empty()) << "the hook did not run";
    EXPECT_EQ(ro.code, Code::Permission) << ro.message;
    EXPECT_NE(ro.message.find("was replaced"), std::string::npos) << ro.message;
    EXPECT_NE(ro.message.find(gTarget), std::string::npos) << ro.message;
    // Without interference the (replacement) object opens normally.
    const Status again = Registry::openReadOnly(spec.objectName(geteuid()), reader);
    EXPECT_TRUE(again) << again.message;
    reader.reset();
    if (!gReplacement.empty()) unlink(gReplacement.c_str());
    removeMachine(spec);
}

TEST(RegistryPermission, SecondUserCanNeitherReadNorListIt) {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to act as a second user (setresuid)";
    const MachineSpec spec = uniqueMachine();
    auto registry = openOrFail(spec);
    ASSERT_TRUE(registry->reserve(0, 2 * kMiB));
    const std::string name = spec.objectName(geteuid());
    const pid_t other = forkChild([&] {
        if (setresgid(kNobody, kNobody, kNobody) != 0 || setresuid(kNobody, kNobody, kNobody) != 0)
            return 1;
        std::unique_ptr<Registry> foreign;
        // Each user's registries live in a directory of its own: ours is not even found there.
        if (const Code code = Registry::openReadOnly(name, foreign).code;
            code != Code::NotFound && code != Code::Permission)
            return 2;
        const auto listed = listMachines(kNobody);
        if (std::find(listed.begin(), listed.end(), name) != listed.end()) return 3;
        // The same machine settings give the second user a registry of its own.
        std::unique_ptr<Registry> own;
        const Status status = Registry::open(spec, {}, own);
        if (!status || own->name() == name || !own->reserve(0, 64 * kMiB)) return 4;
        const std::string dir = own->directory();
        own.reset();
        unlink(registry::objectPath(dir, spec.objectName(kNobody)).c_str());
        unlink(registry::lockPath(dir, spec.objectName(kNobody)).c_str());
        rmdir(dir.c_str());
        return 0;
    });
    EXPECT_EQ(waitChild(other), 0);
    registry.reset();
    removeMachine(spec);
}

}  // namespace
}  // namespace mtia::registry::test
