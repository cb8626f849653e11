// Which peers of a process group have exited, and errors that name them. A collective that fails
// because a peer never arrived (a store barrier's timeout, a closed connection of gloo's) says
// which rank it waited for, which process that was and whether that process is gone, instead of a
// bare "timeout". Liveness is known for peers on this host only (through a pidfd of each, or
// kill(pid, 0) where pidfd_open is refused); a peer on another host is reported as such.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace torch_mtia::dist {

// A rank's process as it published itself to the group (PeerRecord's host and pid).
struct PeerProcess {
    std::string host;
    int32_t pid = 0;  // 0: not known (the rank never published)
};

// Watches the processes of a group's ranks that run on this rank's host. Construction opens one
// pidfd per such peer (no blocking; nothing fails: a peer whose pidfd cannot be opened is checked
// with kill(pid, 0) instead, and one already gone is reported as exited). Thread-safe after
// construction (the queries only read); they touch no device, so they are legal during capture.
class PeerLiveness {
public:
    PeerLiveness() = default;
    // peers[r] is rank r's process, for every rank of the group (this rank's own is never watched).
    PeerLiveness(int rank, std::vector<PeerProcess> peers);
    ~PeerLiveness();
    PeerLiveness(PeerLiveness&& other) noexcept;
    PeerLiveness& operator=(PeerLiveness&& other) noexcept;
    PeerLiveness(const PeerLiveness&) = delete;
    PeerLiveness& operator=(const PeerLiveness&) = delete;

    int size() const { return static_cast<int>(peers_.size()); }
    // Whether rank r's process has exited (a zombie not yet reaped counts as exited). False for
    // this rank, for ranks on another host and for ranks out of range. Never blocks.
    bool exited(int r) const;
    // Every rank for which exited() holds, in rank order.
    std::vector<int> exitedRanks() const;
    // "rank 1 (pid 1234, host h)", or "rank 1 (host h)" when its pid is not known.
    std::string describe(int r) const;
    // What is known of rank r's state: "it has exited", "its process is alive", or "it runs on
    // another host (h), where its liveness cannot be checked from here".
    std::string state(int r) const;

private:
    int rank_ = -1;
    std::string host_;
    std::vector<PeerProcess> peers_;
    std::vector<int> pidfds_;  // -1: not watched through a pidfd
};

// The message of a collective that waited `waited` for ranks `missing` at its step `step`, e.g.
// "torch_mtia.distributed: all_reduce step 12: rank 1 (pid 1234, host h) did not arrive within
// 5000 ms; it has exited". With `missing` empty (not known, e.g. from a gloo error), names the
// peers that have exited instead, or says that every peer on this host is alive. `cause`, when not
// empty, is appended ("(cause: ...)"). Never throws anything but std::bad_alloc.
std::string peerFailureMessage(const PeerLiveness& liveness, std::string_view collective,
                               uint64_t step, const std::vector<int>& missing,
                               std::chrono::milliseconds waited, std::string_view cause = {});

// For the cross-host path: the message for a collective that failed with `error` (e.g. gloo's
// "Connection closed by peer"): names the ranks known to have exited (same-host peers) and keeps
// gloo's text as the cause. Call it in a catch block and throw c10::DistBackendError with it.
std::string explainCollectiveError(const PeerLiveness& liveness, std::string_view collective,
                                   uint64_t step, const std::exception& error);

}  // namespace torch_mtia::dist
