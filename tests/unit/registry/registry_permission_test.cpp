// Who may open a registry: reference/smi-topology-ipc.md section 4.10 case 4.
// The object and its lock file must be the caller's own, mode 0600, and no
// link; another user can neither read the registry nor see it listed.
#include "registry_test_util.hpp"

#include <boost/interprocess/permissions.hpp>
#include <boost/interprocess/shared_memory_object.hpp>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

namespace mtia::registry::test {
namespace {

constexpr uid_t kNobody = 65534;

std::string objectPath(const MachineSpec& spec) { return std::string(shmDirectory()) + "/" + spec.objectName(geteuid()); }

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

TEST(RegistryPermission, ObjectPlantedByAnotherUserIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to create an object as another user (setresuid)";
  const MachineSpec spec = uniqueMachine();
  const std::string name = spec.objectName(geteuid());
  // /dev/shm is world-writable: anyone can take our name first. The owner check must catch it.
  const int lockFd = open(lockPath(name).c_str(), O_CREAT | O_RDWR, 0600);
  ASSERT_GE(lockFd, 0);
  close(lockFd);
  const pid_t planter = forkChild([&] {
    if (setresgid(kNobody, kNobody, kNobody) != 0 || setresuid(kNobody, kNobody, kNobody) != 0) return 1;
    namespace bip = boost::interprocess;
    bip::permissions perms;
    perms.set_permissions(0600);
    bip::shared_memory_object shm(bip::create_only, name.c_str(), bip::read_write, perms);
    shm.truncate(static_cast<bip::offset_t>(objectBytes(kDefaultSlots)));
    return 0;
  });
  ASSERT_EQ(waitChild(planter), 0);
  std::unique_ptr<Registry> registry;
  const Status status = Registry::open(spec, {}, registry);
  EXPECT_EQ(status.code, Code::Permission);
  EXPECT_NE(status.message.find("belongs to uid 65534"), std::string::npos) << status.message;
  removeMachine(spec);
}

TEST(RegistryPermission, SecondUserCanNeitherReadNorListIt) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to act as a second user (setresuid)";
  const MachineSpec spec = uniqueMachine();
  auto registry = openOrFail(spec);
  ASSERT_TRUE(registry->reserve(0, 2 * kMiB));
  const std::string name = spec.objectName(geteuid());
  const pid_t other = forkChild([&] {
    if (setresgid(kNobody, kNobody, kNobody) != 0 || setresuid(kNobody, kNobody, kNobody) != 0) return 1;
    std::unique_ptr<Registry> foreign;
    if (Registry::openReadOnly(name, foreign).code != Code::Permission) return 2;
    const auto listed = listMachines(kNobody);
    if (std::find(listed.begin(), listed.end(), name) != listed.end()) return 3;
    // The same machine settings give the second user a registry of its own.
    std::unique_ptr<Registry> own;
    const Status status = Registry::open(spec, {}, own);
    if (!status || own->name() == name || !own->reserve(0, 64 * kMiB)) return 4;
    own.reset();
    boost::interprocess::shared_memory_object::remove(spec.objectName(kNobody).c_str());
    unlink(lockPath(spec.objectName(kNobody)).c_str());
    return 0;
  });
  EXPECT_EQ(waitChild(other), 0);
  registry.reset();
  removeMachine(spec);
}

}  // namespace
}  // namespace mtia::registry::test
