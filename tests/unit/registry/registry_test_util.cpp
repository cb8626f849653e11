#include "registry_test_util.hpp"

#include <gtest/gtest.h>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

namespace mtia::registry::test {

MachineSpec uniqueMachine(uint32_t devices, uint64_t memory) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  MachineSpec spec;
  spec.name = std::string("regtest-") + (info ? info->test_suite_name() : "x") + "-" + (info ? info->name() : "x") + "-" +
              std::to_string(getpid());
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

Gate::Gate() {
  if (pipe(fds_) != 0) std::abort();
}

Gate::~Gate() {
  if (fds_[0] >= 0) close(fds_[0]);
  if (fds_[1] >= 0) close(fds_[1]);
}

void Gate::open() {
  const char byte = 1;
  (void)!write(fds_[1], &byte, 1);
}

void Gate::closeWriter() {
  if (fds_[1] >= 0) close(fds_[1]);
  fds_[1] = -1;
}

bool Gate::wait(int timeoutMs) {
  pollfd p{fds_[0], POLLIN, 0};
  if (poll(&p, 1, timeoutMs) != 1) return false;
  char byte = 0;
  return read(fds_[0], &byte, 1) == 1;
}

pid_t forkChild(const std::function<int()>& body) {
  fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    int code = 255;
    try {
      code = body();
    } catch (...) {
    }
    _exit(code);
  }
  return pid;
}

int waitChild(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

void killChild(pid_t pid) {
  kill(pid, SIGKILL);
  waitChild(pid);
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
  void* bytes = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
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
  if (!bytes.empty() && pwrite(fd, bytes.data(), bytes.size(), 0) != static_cast<ssize_t>(bytes.size())) std::abort();
  ::close(fd);
}

void killSelfAt(testing::Point point) {
  killPoint.store(static_cast<int>(point));
  testing::setHook(killHook);
}

}  // namespace mtia::registry::test

#if defined(__SANITIZE_THREAD__)
// ThreadSanitizer sees only this process: the registry's robust mutex lives in shared memory and is
// locked and recovered (EOWNERDEAD) by other processes, which it reports as "unlock of an unlocked
// mutex" (in forked children too, which then exit with its status 66). Mutex-misuse reports are off
// for this program; data races are still reported. (Exported: the sanitizer runtime is a shared
// library that looks it up dynamically; the build files export the program's symbols.)
extern "C" __attribute__((visibility("default"))) const char* __tsan_default_options() {
  // die_after_fork=0: children forked after this process registered (its request watcher is a thread)
  // register anew and start their own watcher, which TSan would otherwise refuse.
  return "report_mutex_bugs=0:die_after_fork=0";
}
#endif
