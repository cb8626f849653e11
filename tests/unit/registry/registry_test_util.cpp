#include "registry_test_util.hpp"

#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <cstdlib>

namespace mtia::registry::test {

MachineSpec uniqueMachine(uint32_t devices, uint64_t memory) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    MachineSpec spec;
    spec.name = std::string("regtest-") + (info ? info->test_suite_name() : "x") + "-" +
                (info ? info->name() : "x") + "-" + std::to_string(getpid());
    for (char& c : spec.name)
        if (c == '/') c = '_';
    spec.devices = devices;
    spec.memoryBytes = memory;
    spec.engines = 1;
    removeMachine(spec);
    return spec;
}

void removeMachine(const MachineSpec& spec) {
    const std::string name = spec.objectName(geteuid());
    ::unlink(objectPath(name).c_str());
    ::unlink(lockPath(name).c_str());
}

std::unique_ptr<Registry> openOrFail(const MachineSpec& spec, Registry::Options options) {
    std::unique_ptr<Registry> registry;
    const Status status = Registry::open(spec, options, registry);
    EXPECT_TRUE(status) << status.message;
    return registry;
}

}  // namespace mtia::registry::test

#include "platform/registry/user_directory.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <atomic>
#include <cstring>

namespace mtia::registry::test {
namespace {

std::atomic<int> killPoint{-1};

void killHook(testing::Point point) {
    if (static_cast<int>(point) == killPoint.load()) raise(SIGKILL);
}

}  // namespace

void editObject(const MachineSpec& spec, const std::function<void(char*, size_t)>& edit) {
    const int fd = ::open(objectPath(spec.objectName(geteuid())).c_str(), O_RDWR | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) std::abort();
    void* bytes =
        mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (bytes == MAP_FAILED) std::abort();
    edit(static_cast<char*>(bytes), static_cast<size_t>(st.st_size));
    munmap(bytes, static_cast<size_t>(st.st_size));
}

void writeObject(const MachineSpec& spec, const std::string& bytes) {
    const std::string name = spec.objectName(geteuid());
    UserDirectory dir;
    if (!userDirectory(geteuid(), true, dir)) std::abort();
    const int lockFd = ::open(lockPath(dir.path, name).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lockFd >= 0) ::close(lockFd);
    const int fd = ::open(objectPath(dir.path, name).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0 || ftruncate(fd, static_cast<off_t>(bytes.size())) != 0) std::abort();
    if (!bytes.empty() &&
        pwrite(fd, bytes.data(), bytes.size(), 0) != static_cast<ssize_t>(bytes.size()))
        std::abort();
    ::close(fd);
}

void killSelfAt(testing::Point point) {
    killPoint.store(static_cast<int>(point));
    testing::setHook(killHook);
}

}  // namespace mtia::registry::test
