#include "requests.hpp"

#include "machine_name.hpp"

#include <linux/futex.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

namespace mtia::registry {
namespace {

std::atomic<RequestHandler> gHandler{nullptr};

}  // namespace

void setRequestHandler(RequestHandler handler) { gHandler.store(handler, std::memory_order_release); }
RequestHandler requestHandler() { return gHandler.load(std::memory_order_acquire); }

Status requestDirectory(uid_t uid, bool create, std::string& out) {
  const std::string dir = std::string(shmDirectory()) + "/mtia_requests.u" + std::to_string(uid);
  if (create && ::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return Status::error(Code::System, "cannot create " + dir + ": " + std::strerror(errno));
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0) {
    const int err = errno;
    return Status::error(err == ENOENT ? Code::NotFound : Code::System, dir + ": " + std::strerror(err));
  }
  if (!S_ISDIR(st.st_mode) || st.st_uid != uid || (st.st_mode & 077) != 0)
    return Status::error(Code::Permission, dir + " is not a directory of uid " + std::to_string(uid) +
                                               " with mode 0700; refusing it");
  out = dir;
  return Status::ok();
}

std::string requestFile(const std::string& dir, uint32_t slot, uint32_t token, RequestOp op) {
  return dir + "/slot" + std::to_string(slot) + "." + std::to_string(token) +
         (op == RequestOp::SnapshotJson ? ".json" : ".pickle");
}

void wakeRequestWord(std::atomic<uint64_t>& word) {
  // The low half of the little-endian word holds the token, which is never 0 in a request.
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__);
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace mtia::registry
