#include "dist_peers.h"

#include "../kernels/dist_params.h"
#include "mtia_check.h"
#include "streams.h"

#include <mtia/mtia_ml.h>

#include <c10/util/Exception.h>

#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace torch_mtia::dist {

namespace {

constexpr size_t kDefaultStagingBytes = size_t{4} << 20;

std::vector<uint8_t> toBytes(const PeerRecord& record) {
    const auto* p = reinterpret_cast<const uint8_t*>(&record);
    return {p, p + sizeof record};
}

}  // namespace

size_t stagingBytesFromEnv() {
    const char* text = std::getenv("MTIA_DIST_STAGING_BYTES");
    if (text == nullptr || *text == '\0') return kDefaultStagingBytes;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(text, &end, 10);
    // At least 64 bytes: one element of every dtype for each of the most peers a step splits over.
    TORCH_CHECK(end != text && *end == '\0' && v >= 64 && v <= (size_t{1} << 34),
                "torch_mtia.distributed: MTIA_DIST_STAGING_BYTES must be a byte count from 64 to "
                "2^34, got '",
                text, "'");
    return static_cast<size_t>(v & ~uint64_t{7});
}

namespace {

// Every rank's record, or an error naming the ranks whose record is missing after timeout (they
// have not reached their first collective of the group, or have died before).
void waitForRecords(c10d::Store& store, const std::vector<std::string>& keys, int rank,
                    std::chrono::milliseconds timeout) {
    try {
        store.wait(keys, timeout);
        return;
    } catch (const c10::Error& e) {
        std::string missing;
        for (size_t r = 0; r < keys.size(); ++r) {
            if (store.check({keys[r]})) continue;
            missing += (missing.empty() ? "rank " : ", rank ") + std::to_string(r);
        }
        if (missing.empty()) return;  // the last one came in meanwhile
        C10_THROW_ERROR(DistStoreError,
                        "torch_mtia.distributed: rank " + std::to_string(rank) +
                            " set up the group's same-host communicator, but " + missing +
                            " did not publish its record within " +
                            std::to_string(timeout.count()) +
                            " ms (not at its first collective of the group yet, or exited) "
                            "(cause: " +
                            e.msg() + ")");
    }
}

}  // namespace

void describeHost(PeerRecord& record) {
    TORCH_CHECK(gethostname(record.host, sizeof record.host - 1) == 0,
                "torch_mtia.distributed: gethostname failed: ", std::strerror(errno));
    record.host[sizeof record.host - 1] = '\0';
    // The machine's own device 0, which MTIA_VISIBLE_DEVICES does not renumber: two processes on
    // one host may use two simulated machines (MTIA_SIM_MACHINE), which share no memory.
    MTIA_CHECK(mtiamlInit());
    mtiamlDeviceInfo info = MTIAML_DEVICE_INFO_INIT;
    const mtiaError_t status = mtiamlDeviceGetInfo(0, &info);
    mtiamlShutdown();
    MTIA_CHECK(status);
    std::memcpy(record.machine, info.uuid, sizeof record.machine);
}

SameHostComm::SameHostComm(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                           c10::DeviceIndex device, std::chrono::milliseconds timeout)
    : rank_(rank), size_(size), device_(device), staging_(size), ready_(size), done_(size) {
    TORCH_CHECK(size <= MTIA_TORCH_DIST_MAX_PEERS,
                "torch_mtia.distributed: the mtia backend "
                "supports at most ",
                MTIA_TORCH_DIST_MAX_PEERS, " ranks per group for now, got ", size);
    DeviceScope scope(device);
    try {
        PeerRecord self{};
        describeHost(self);
        self.device = device;
        self.pid = static_cast<int32_t>(getpid());
        stagingBytes_ = stagingBytesFromEnv();
        self.stagingBytes = stagingBytes_;
        MTIA_CHECK(mtiaStreamCreateWithFlags(&stream_, mtiaStreamNonBlocking));
        for (int p = 0; p < 2; ++p) {
            void* buffer = nullptr;
            MTIA_CHECK(mtiaMalloc(&buffer, stagingBytes_));
            staging_[rank][p] = static_cast<char*>(buffer);
            MTIA_CHECK(mtiaIpcGetMemHandle(&self.staging[p], buffer));
            const unsigned flags = mtiaEventInterprocess | mtiaEventDisableTiming;
            MTIA_CHECK(mtiaEventCreateWithFlags(&ready_[rank][p], flags));
            MTIA_CHECK(mtiaEventCreateWithFlags(&done_[rank][p], flags));
            MTIA_CHECK(mtiaIpcGetEventHandle(&self.ready[p], ready_[rank][p]));
            MTIA_CHECK(mtiaIpcGetEventHandle(&self.done[p], done_[rank][p]));
        }
        store->set("peer/" + std::to_string(rank), toBytes(self));
        std::vector<std::string> keys;
        for (int r = 0; r < size; ++r) keys.push_back("peer/" + std::to_string(r));
        waitForRecords(*store, keys, rank, timeout);
        std::vector<PeerProcess> processes(size);
        processes[rank] = {self.host, self.pid};
        for (int r = 0; r < size; ++r) {
            if (r == rank) continue;
            const std::vector<uint8_t> bytes = store->get(keys[r]);
            TORCH_CHECK(bytes.size() == sizeof(PeerRecord), "torch_mtia.distributed: rank ", r,
                        " published a record of ", bytes.size(), " bytes, expected ",
                        sizeof(PeerRecord), " (another torch_mtia version?)");
            PeerRecord peer;
            std::memcpy(&peer, bytes.data(), sizeof peer);
            peer.host[sizeof peer.host - 1] = '\0';
            processes[r] = {peer.host, peer.pid};
            TORCH_CHECK(peer.stagingBytes == stagingBytes_, "torch_mtia.distributed: rank ", r,
                        " stages ", peer.stagingBytes, " bytes per buffer, rank ", rank, " ",
                        stagingBytes_, ": set MTIA_DIST_STAGING_BYTES alike in every process");
            for (int p = 0; p < 2; ++p) {
                void* mapped = nullptr;
                MTIA_CHECK(
                    mtiaIpcOpenMemHandle(&mapped, peer.staging[p], mtiaIpcMemLazyEnablePeerAccess));
                staging_[r][p] = static_cast<char*>(mapped);
                MTIA_CHECK(mtiaIpcOpenEventHandle(&ready_[r][p], peer.ready[p]));
                MTIA_CHECK(mtiaIpcOpenEventHandle(&done_[r][p], peer.done[p]));
            }
        }
        liveness_ = PeerLiveness(rank, std::move(processes));
    } catch (...) {
        release();
        throw;
    }
}

SameHostComm::~SameHostComm() {
    release();
}

// Peers may still read this rank's buffers when it goes away first: the runtime defers the free of
// an exported allocation until the last importer closed it (mtia_ipc.h), so only this process's
// own work must be finished here.
void SameHostComm::release() noexcept {
    int previous = -1;
    if (mtiaExchangeDevice(device_, &previous) != mtiaSuccess) previous = -1;
    if (stream_ != nullptr) mtiaStreamSynchronize(stream_);
    for (int r = 0; r < size_; ++r) {
        for (int p = 0; p < 2; ++p) {
            if (staging_[r][p] != nullptr) {
                if (r == rank_) {
                    mtiaFree(staging_[r][p]);
                } else {
                    mtiaIpcCloseMemHandle(staging_[r][p]);
                }
                staging_[r][p] = nullptr;
            }
            if (ready_[r][p] != nullptr) mtiaEventDestroy(ready_[r][p]);
            if (done_[r][p] != nullptr) mtiaEventDestroy(done_[r][p]);
            ready_[r][p] = done_[r][p] = nullptr;
        }
    }
    if (stream_ != nullptr) mtiaStreamDestroy(stream_);
    stream_ = nullptr;
    if (previous >= 0) mtiaSetDevice(previous);
}

}  // namespace torch_mtia::dist
