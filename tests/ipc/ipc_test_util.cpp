#include "ipc_test_util.hpp"

#include <dirent.h>
#include <poll.h>

#include <cerrno>
#include <cstdlib>

namespace mtia::ipc::test {

Channel::Channel() {
  if (pipe(fds_) != 0) std::abort();
}

Channel::~Channel() {
  close(fds_[0]);
  close(fds_[1]);
}

bool Channel::send(const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = write(fds_[1], p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool Channel::receive(void* data, size_t size, int timeoutMs) {
  char* p = static_cast<char*>(data);
  while (size > 0) {
    pollfd pfd{fds_[0], POLLIN, 0};
    const int ready = poll(&pfd, 1, timeoutMs);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return false;
    const ssize_t n = read(fds_[0], p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

int memoryFileOf(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return -1;
  int found = -1;
  while (dirent* e = readdir(d)) {
    char target[256] = {};
    const std::string link = dir + "/" + e->d_name;
    const ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
    if (n > 0 && std::string(target).find("memfd:mtia-sim-dev0") != std::string::npos) {
      found = std::atoi(e->d_name);
      break;
    }
  }
  closedir(d);
  return found;
}

}  // namespace mtia::ipc::test
