#include "runtime/context/memory_snapshot.hpp"

#include "allocator/history/snapshot_assembly.hpp"
#include "allocator/snapshot/writer.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "runtime/context/runtime.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace mtia {

namespace {

// Bytes in one block from malloc, grown with realloc: a JSON snapshot of hundreds of MB is written
// once and handed over as it is (realloc of a large block remaps its pages instead of copying
// them).
class MallocBuffer {
public:
    MallocBuffer() = default;
    ~MallocBuffer() { std::free(data_); }
    MallocBuffer(const MallocBuffer&) = delete;
    MallocBuffer& operator=(const MallocBuffer&) = delete;

    void append(std::string_view bytes) {
        if (bytes.size() + 1 > capacity_ - size_) {  // + 1: the NUL
            size_t want = std::max(capacity_ * 2, size_ + bytes.size() + 1);
            void* grown = std::realloc(data_, want);
            if (grown == nullptr)
                fail(mtiaErrorMemoryAllocation, "no host memory for a snapshot of {} bytes", want);
            data_ = static_cast<char*>(grown);
            capacity_ = want;
        }
        if (bytes.empty()) return;  // (memcpy from the null of an empty view is undefined)
        std::memcpy(data_ + size_, bytes.data(), bytes.size());
        size_ += bytes.size();
    }
    mtiaBuffer release() {
        append({});  // room for the NUL
        data_[size_] = '\0';
        mtiaBuffer out{data_, size_};
        data_ = nullptr;
        size_ = capacity_ = 0;
        return out;
    }

private:
    char* data_ = nullptr;
    size_t size_ = 0;
    size_t capacity_ = 0;
};

}  // namespace

mtiaBuffer memorySnapshot(Runtime& rt, mtiaSnapshotFormat format, bool traces) {
    allocator::HistoryRecorder& history = rt.allocatorContext().history();
    std::vector<allocator::DeviceSnapshot> devices;
    try {
        for (int i = 0; i < rt.deviceCount(); ++i)
            if (allocator::DeviceAllocator* mem = rt.device(i).memoryIfStarted()) {
                devices.push_back(mem->collectSnapshot(traces));
                // Read after the copy: a block or entry of the default stream in it means the
                // stream existed.
                devices.back().defaultStream =
                    static_cast<uint64_t>(rt.device(i).defaultStreamIdIfCreated());
            }
    } catch (...) {
        allocator::releaseSnapshotContexts(devices, history);  // what was copied so far
        history.drain();
        throw;
    }
    mem::Snapshot snap = allocator::assembleSnapshot(devices, rt.deviceCount(),
                                                     rt.allocatorContext().config(), history);
    history.drain();
    MallocBuffer out;
    if (format == mtiaSnapshotPickle)
        out.append(mem::toPickle(snap));
    else
        mem::writeJson(snap, [&](std::string_view chunk) { out.append(chunk); });
    return out.release();
}

void dumpMemorySnapshot(Runtime& rt, const std::string& path, mtiaSnapshotFormat format,
                        bool traces) {
    mtiaBuffer bytes = memorySnapshot(rt, format, traces);
    struct Owner {
        mtiaBuffer& b;
        ~Owner() { std::free(b.data); }
    } owner{bytes};
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr)
        fail(mtiaErrorInvalidValue, "path '{}' cannot be opened for writing: {}", path,
             std::strerror(errno));
    struct stat st {};
    const bool regular = ::fstat(::fileno(f), &st) == 0 && S_ISREG(st.st_mode);
    const size_t written = std::fwrite(bytes.data, 1, bytes.size, f);
    const int writeErrno = errno;
    if (std::fclose(f) != 0 || written != bytes.size) {
        if (regular)
            std::remove(path.c_str());  // a half-written file, not a device such as /dev/full
        fail(mtiaErrorInvalidValue, "writing the snapshot to path '{}' failed: {}", path,
             std::strerror(written != bytes.size ? writeErrno : errno));
    }
}

void installOomSnapshot(Runtime& rt, const std::string& path) {
    // The observer runs with no allocator lock held, after the allocator recorded the oom entry.
    static std::string target;
    target = path;
    rt.allocatorContext().addOomObserver(
        [](int dev, size_t requested, size_t, size_t, void* user) {
            auto* runtime = static_cast<Runtime*>(user);
            if (!runtime->allocatorContext().history().recording()) return;
            const size_t n = target.size();
            const bool json = n >= 5 && target.compare(n - 5, 5, ".json") == 0;
            try {
                dumpMemorySnapshot(*runtime, target, json ? mtiaSnapshotJson : mtiaSnapshotPickle,
                                   true);
                log(LogLevel::Warn,
                    "device {}: out of memory allocating {} bytes; memory snapshot written to {}",
                    dev, requested, target);
            } catch (const std::exception& e) {
                log(LogLevel::Error,
                    "device {}: out of memory; writing the snapshot (MTIA_OOM_SNAPSHOT) failed: {}",
                    dev, e.what());
            }
        },
        &rt);
}

}  // namespace mtia
