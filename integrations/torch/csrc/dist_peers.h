// The same-host side of the c10d backend: the processes of a process group that share a simulated
// machine reach each other's device memory directly. At the group's first collective on a device,
// each rank allocates two staging buffers (double buffering: a step may fill one while peers still
// read the other) and four interprocess events (ready and done, per buffer), and exchanges through
// the c10d store its host identity and the IPC handles of all of them; each then maps its peers'
// buffers and opens their events. Nothing is copied through host memory afterwards.
#pragma once

#include "dist_liveness.h"

#include <mtia/mtia.h>

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <array>
#include <chrono>
#include <string>
#include <vector>

namespace torch_mtia::dist {

// What rank publishes about itself under "peer/<rank>" in the group's store.
struct PeerRecord {
    char host[256];       // gethostname, NUL-terminated
    uint8_t machine[16];  // uuid of device 0 of the simulated machine (mtia_ml.h)
    int32_t device;       // this process's device index (diagnostics)
    int32_t pid;
    uint64_t stagingBytes;
    std::array<mtiaIpcMemHandle_t, 2> staging;
    std::array<mtiaIpcEventHandle_t, 2> ready, done;
};

// MTIA_DIST_STAGING_BYTES (default 4 MiB, rounded down to a multiple of 8): the bytes of each
// staging buffer of both paths. Throws c10::Error naming the variable when it is not a byte count
// from 64 to 2^34.
size_t stagingBytesFromEnv();

// This host's identity as peers compare it: the host name and the simulated machine's uuid.
// Throws when the machine cannot be read.
void describeHost(PeerRecord& record);

// The group's same-host communicator on one device. Construction is collective (every rank of the
// group must construct it, with the same store) and blocks until all ranks have published their
// records or timeout passes. Only for groups on one host and simulated machine (groupSpansHosts in
// dist_cross_host.h decides). Throws c10::Error naming the rank and what failed, e.g. more ranks
// than a reduction reads, and c10::DistStoreError naming the ranks that did not publish within
// timeout.
class SameHostComm {
public:
    SameHostComm(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                 c10::DeviceIndex device, std::chrono::milliseconds timeout);
    ~SameHostComm();
    SameHostComm(const SameHostComm&) = delete;
    SameHostComm& operator=(const SameHostComm&) = delete;

    c10::DeviceIndex device() const { return device_; }
    // The stream every collective of the group runs on (created for the group, non-blocking).
    mtiaStream_t stream() const { return stream_; }
    // Bytes of each staging buffer (MTIA_DIST_STAGING_BYTES, default 4 MiB).
    size_t stagingBytes() const { return stagingBytes_; }
    // Rank r's staging buffer `parity` (0 or 1), mapped into this process for r != rank.
    char* staging(int r, int parity) const { return staging_[r][parity]; }
    // Rank r's events: recorded by r after filling its buffer `parity` (ready), and after its
    // last read of everyone's buffer `parity` (done). Only this rank's own may be recorded here.
    mtiaEvent_t ready(int r, int parity) const { return ready_[r][parity]; }
    mtiaEvent_t done(int r, int parity) const { return done_[r][parity]; }
    // The peers' processes, as they published them (for errors that name a dead peer).
    const PeerLiveness& liveness() const { return liveness_; }
    // Releases the device resources now (waits for this rank's queued work on the stream, which
    // never hangs: a wait for a dead peer's event ends). Idempotent; afterwards stream() is null.
    // Not thread-safe against this communicator's other calls.
    void close() noexcept { release(); }

private:
    int rank_, size_;
    c10::DeviceIndex device_;
    mtiaStream_t stream_ = nullptr;
    size_t stagingBytes_ = 0;
    std::vector<std::array<char*, 2>> staging_;
    std::vector<std::array<mtiaEvent_t, 2>> ready_, done_;
    PeerLiveness liveness_;
    void release() noexcept;
};

}  // namespace torch_mtia::dist
