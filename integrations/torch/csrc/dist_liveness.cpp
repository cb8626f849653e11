#include "dist_liveness.h"

#include <c10/util/Exception.h>

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace torch_mtia::dist {

namespace {

int openPidfd(int32_t pid) {
#ifdef SYS_pidfd_open
    return static_cast<int>(syscall(SYS_pidfd_open, static_cast<pid_t>(pid), 0));
#else
    (void)pid;
    errno = ENOSYS;
    return -1;
#endif
}

std::string hostName() {
    char name[256] = {};
    if (gethostname(name, sizeof name - 1) != 0) return {};
    return name;
}

}  // namespace

// A pidfd, unlike a pid, cannot come to name another process once the peer's pid is reused; it
// polls readable once the process has exited, reaped or not.
PeerLiveness::PeerLiveness(int rank, std::vector<PeerProcess> peers)
    : rank_(rank), host_(hostName()), peers_(std::move(peers)), pidfds_(peers_.size(), -1) {
    for (size_t r = 0; r < peers_.size(); ++r) {
        if (static_cast<int>(r) == rank_ || peers_[r].pid <= 0 || peers_[r].host != host_) continue;
        pidfds_[r] = openPidfd(peers_[r].pid);
    }
}

PeerLiveness::~PeerLiveness() {
    for (int fd : pidfds_) {
        if (fd >= 0) close(fd);
    }
}

PeerLiveness::PeerLiveness(PeerLiveness&& other) noexcept
    : rank_(other.rank_), host_(std::move(other.host_)), peers_(std::move(other.peers_)),
      pidfds_(std::move(other.pidfds_)) {
    other.pidfds_.clear();
    other.peers_.clear();
}

PeerLiveness& PeerLiveness::operator=(PeerLiveness&& other) noexcept {
    if (this != &other) {
        for (int fd : pidfds_) {
            if (fd >= 0) close(fd);
        }
        rank_ = other.rank_;
        host_ = std::move(other.host_);
        peers_ = std::move(other.peers_);
        pidfds_ = std::move(other.pidfds_);
        other.pidfds_.clear();
        other.peers_.clear();
    }
    return *this;
}

bool PeerLiveness::exited(int r) const {
    if (r < 0 || r >= size() || r == rank_) return false;
    const PeerProcess& peer = peers_[r];
    if (peer.pid <= 0 || peer.host != host_) return false;
    if (pidfds_[r] >= 0) {
        pollfd p{pidfds_[r], POLLIN, 0};
        return poll(&p, 1, 0) == 1 && (p.revents & (POLLIN | POLLHUP)) != 0;
    }
    // pidfd_open failed at construction: ESRCH there means it was gone already; otherwise a
    // zombie still answers kill(pid, 0), so a peer not yet reaped by its parent counts as alive
    // here until it is.
    return kill(peer.pid, 0) != 0 && errno == ESRCH;
}

std::vector<int> PeerLiveness::exitedRanks() const {
    std::vector<int> ranks;
    for (int r = 0; r < size(); ++r) {
        if (exited(r)) ranks.push_back(r);
    }
    return ranks;
}

std::string PeerLiveness::describe(int r) const {
    std::string s = "rank " + std::to_string(r);
    if (r < 0 || r >= size()) return s;
    const PeerProcess& peer = peers_[r];
    if (peer.pid > 0) {
        s += " (pid " + std::to_string(peer.pid) + ", host " + peer.host + ")";
    } else if (!peer.host.empty()) {
        s += " (host " + peer.host + ")";
    }
    return s;
}

std::string PeerLiveness::state(int r) const {
    if (r < 0 || r >= size() || peers_[r].pid <= 0) return "its process is not known";
    if (peers_[r].host != host_) {
        return "it runs on another host (" + peers_[r].host +
               "), where its liveness cannot be checked from here";
    }
    return exited(r) ? "it has exited" : "its process is alive";
}

std::string peerFailureMessage(const PeerLiveness& liveness, std::string_view collective,
                               uint64_t step, const std::vector<int>& missing,
                               std::chrono::milliseconds waited, std::string_view cause) {
    std::string s = "torch_mtia.distributed: ";
    s += collective;
    s += " step " + std::to_string(step) + ": ";
    if (!missing.empty()) {
        for (size_t i = 0; i < missing.size(); ++i) {
            if (i != 0) s += ", ";
            s += liveness.describe(missing[i]);
        }
        s += " did not arrive";
        s += " within " + std::to_string(waited.count()) + " ms; ";
        for (size_t i = 0; i < missing.size(); ++i) {
            if (i != 0) s += "; ";
            s += missing.size() == 1
                     ? liveness.state(missing[i])
                     : "rank " + std::to_string(missing[i]) + ": " + liveness.state(missing[i]);
        }
    } else {
        const std::vector<int> gone = liveness.exitedRanks();
        if (gone.empty()) {
            s += "failed; every peer on this host is alive";
        } else {
            s += "failed: ";
            for (size_t i = 0; i < gone.size(); ++i) {
                if (i != 0) s += ", ";
                s += liveness.describe(gone[i]);
            }
            s += gone.size() == 1 ? " has exited" : " have exited";
        }
    }
    if (!cause.empty()) {
        s += " (cause: ";
        s += cause;
        s += ")";
    }
    return s;
}

std::string explainCollectiveError(const PeerLiveness& liveness, std::string_view collective,
                                   uint64_t step, const std::exception& error) {
    // c10::Error's what() carries a backtrace; its message alone is what the user needs.
    const auto* c10error = dynamic_cast<const c10::Error*>(&error);
    const std::string cause = c10error != nullptr ? c10error->msg() : error.what();
    return peerFailureMessage(liveness, collective, step, {}, std::chrono::milliseconds(0), cause);
}

}  // namespace torch_mtia::dist
