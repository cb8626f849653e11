// IPC memory handles between processes (mtia_ipc.h): round trips, reference
// counts, bad and stale handles, a killed exporter or importer, the sealed
// memory file, another user, capacity. Runs as test ipc (one machine, 256 MiB
// devices); every runtime lives in a forked child.
#include "ipc_test_util.hpp"

#include "platform/registry/registry.hpp"
#include "platform/registry/user_directory.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <vector>

namespace mtia::ipc::test {
namespace {

bool filledWith(const void* devPtr, size_t size, unsigned char value) {
    std::vector<unsigned char> host(size);
    if (mtiaMemcpy(host.data(), devPtr, size, mtiaMemcpyDeviceToHost) != mtiaSuccess) return false;
    for (unsigned char c : host)
        if (c != value) return false;
    return true;
}

// Layout of the handle (ipc_memory.hpp and sim/ipc.hpp): runtime header of 24 bytes, then the
// driver's descriptor: magic, version and kind (8), uid (4), machine (4), slot, index (8),
// registration (8), generation (8).
constexpr size_t kDriverAt = 24;
constexpr size_t kUidAt = kDriverAt + 8;
constexpr size_t kMachineAt = kDriverAt + 12;
constexpr size_t kGenerationAt = kDriverAt + 32;

TEST(IpcMemory, RoundTripBothWays) {
    Channel toImporter, toExporter;
    const auto exporter = [&] {
        watchdog();
        void* p = nullptr;
        IPC_CHECK(mtiaMalloc(&p, 8 * kMiB + 1000) == mtiaSuccess);
        IPC_CHECK(mtiaMemset(p, 0x5A, 8 * kMiB + 1000) == mtiaSuccess);
        mtiaIpcMemHandle_t h, again;
        IPC_CHECK(mtiaIpcGetMemHandle(&h, p) == mtiaSuccess);
        IPC_CHECK(mtiaIpcGetMemHandle(&again, p) == mtiaSuccess);
        IPC_CHECK(std::memcmp(&h, &again, sizeof h) == 0);  // the same allocation, the same handle
        IPC_CHECK(toImporter.send(h));
        char done = 0;
        IPC_CHECK(toExporter.receive(done));
        IPC_CHECK(filledWith(p, 4096, 0xA5));                             // the importer's write
        IPC_CHECK(filledWith(static_cast<char*>(p) + 4096, 4096, 0x5A));  // the rest untouched
        IPC_CHECK(mtiaFree(p) == mtiaSuccess);
        return 0;
    };
    const auto importer = [&] {
        watchdog();
        mtiaIpcMemHandle_t h;
        IPC_CHECK(toImporter.receive(h));
        void* p = nullptr;
        IPC_CHECK(mtiaIpcOpenMemHandle(&p, h, mtiaIpcMemLazyEnablePeerAccess) == mtiaSuccess);
        IPC_CHECK(filledWith(p, 8 * kMiB + 1000, 0x5A));
        mtiaPointerAttributes attr{};
        attr.structSize = sizeof attr;
        IPC_CHECK(mtiaPointerGetAttributes(&attr, p) == mtiaSuccess);
        IPC_CHECK(attr.type == mtiaMemoryTypeDevice && attr.base == p &&
                  attr.size == 8 * kMiB + 1000);
        // Past the allocation: refused like any device range that runs past its allocation.
        IPC_CHECK_ERROR(mtiaMemset(p, 0, 8 * kMiB + 1001), mtiaErrorInvalidValue, "runs past");
        IPC_CHECK(mtiaMemset(p, 0xA5, 4096) == mtiaSuccess);
        IPC_CHECK(mtiaIpcCloseMemHandle(p) == mtiaSuccess);
        const char done = 1;
        IPC_CHECK(toExporter.send(done));
        return 0;
    };
    expectExporterAndImporterPass(exporter, importer);
}

TEST(IpcMemory, OpenTwiceCountsAndCloseRules) {
    Channel toImporter, toExporter;
    const auto exporter = [&] {
        watchdog();
        void* p = nullptr;
        IPC_CHECK(mtiaMalloc(&p, 1 * kMiB) == mtiaSuccess);
        mtiaIpcMemHandle_t h;
        IPC_CHECK(mtiaIpcGetMemHandle(&h, p) == mtiaSuccess);
        // The exporter itself cannot open its handle.
        void* self = nullptr;
        IPC_CHECK_ERROR(mtiaIpcOpenMemHandle(&self, h, 0), mtiaErrorInvalidValue,
                        "exported by this process");
        // Interior, host and freed pointers are no allocations to export.
        mtiaIpcMemHandle_t other;
        IPC_CHECK_ERROR(mtiaIpcGetMemHandle(&other, static_cast<char*>(p) + 512),
                        mtiaErrorInvalidValue, "devPtr");
        int host = 0;
        IPC_CHECK_ERROR(mtiaIpcGetMemHandle(&other, &host), mtiaErrorInvalidValue, "devPtr");
        void* q = nullptr;
        IPC_CHECK(mtiaMalloc(&q, 1 * kMiB) == mtiaSuccess);
        IPC_CHECK(mtiaFree(q) == mtiaSuccess);
        IPC_CHECK_ERROR(mtiaIpcGetMemHandle(&other, q == p ? nullptr : q), mtiaErrorInvalidValue,
                        "devPtr");
        IPC_CHECK_ERROR(mtiaIpcGetMemHandle(nullptr, p), mtiaErrorInvalidValue, "handle");
        IPC_CHECK(toImporter.send(h));
        char done = 0;
        IPC_CHECK(toExporter.receive(done));
        IPC_CHECK(mtiaFree(p) == mtiaSuccess);
        return 0;
    };
    const auto importer = [&] {
        watchdog();
        mtiaIpcMemHandle_t h;
        IPC_CHECK(toImporter.receive(h));
        void* a = nullptr;
        void* b = nullptr;
        IPC_CHECK(mtiaIpcOpenMemHandle(&a, h, 0) == mtiaSuccess);
        IPC_CHECK(mtiaIpcOpenMemHandle(&b, h, 0) == mtiaSuccess);
        IPC_CHECK(a == b);
        IPC_CHECK_ERROR(mtiaIpcOpenMemHandle(&b, h, 2), mtiaErrorInvalidValue, "flags");
        IPC_CHECK_ERROR(mtiaIpcOpenMemHandle(nullptr, h, 0), mtiaErrorInvalidValue, "devPtr");
        IPC_CHECK(mtiaIpcCloseMemHandle(a) == mtiaSuccess);
        IPC_CHECK(mtiaMemset(a, 1, 64) == mtiaSuccess);  // still mapped after the first close
        IPC_CHECK(filledWith(a, 64, 1));
        IPC_CHECK(mtiaIpcCloseMemHandle(b) == mtiaSuccess);
        IPC_CHECK_ERROR(mtiaIpcCloseMemHandle(a), mtiaErrorInvalidValue, "not an open IPC mapping");
        // A pointer of this process's own allocator is no IPC mapping either.
        void* own = nullptr;
        IPC_CHECK(mtiaMalloc(&own, 4096) == mtiaSuccess);
        IPC_CHECK_ERROR(mtiaIpcCloseMemHandle(own), mtiaErrorInvalidValue,
                        "not an open IPC mapping");
        // Imported memory is not this process's to export again.
        IPC_CHECK(mtiaIpcOpenMemHandle(&a, h, 0) == mtiaSuccess);
        mtiaIpcMemHandle_t again;
        IPC_CHECK_ERROR(mtiaIpcGetMemHandle(&again, a), mtiaErrorInvalidValue, "imported");
        IPC_CHECK(mtiaIpcCloseMemHandle(a) == mtiaSuccess);
        IPC_CHECK(mtiaFree(own) == mtiaSuccess);
        const char done = 1;
        IPC_CHECK(toExporter.send(done));
        return 0;
    };
    expectExporterAndImporterPass(exporter, importer);
}

// A good handle damaged in one place, and how opening it must fail.
struct DamagedHandle {
    const char* what;
    void (*damage)(mtiaIpcMemHandle_t&);
    mtiaError_t code;
    const char* says;
};
const DamagedHandle kDamagedHandles[] = {
    {"all zero", [](mtiaIpcMemHandle_t& h) { std::memset(&h, 0, sizeof h); },
     mtiaErrorInvalidHandle, "handle is not an IPC handle"},
    {"runtime magic", [](mtiaIpcMemHandle_t& h) { h.reserved[0] ^= 0x7f; }, mtiaErrorInvalidHandle,
     "bad magic"},
    {"runtime version", [](mtiaIpcMemHandle_t& h) { h.reserved[4] = 9; }, mtiaErrorInvalidHandle,
     "handle has handle version 9"},
    {"driver magic", [](mtiaIpcMemHandle_t& h) { h.reserved[kDriverAt] ^= 0x7f; },
     mtiaErrorInvalidHandle, "not one of the simulated driver"},
    {"machine", [](mtiaIpcMemHandle_t& h) { h.reserved[kMachineAt] ^= 0x01; },
     mtiaErrorInvalidHandle, "another simulated machine"},
    {"generation", [](mtiaIpcMemHandle_t& h) { h.reserved[kGenerationAt] ^= 0x40; },
     mtiaErrorInvalidHandle, "freed"},
    {"uid", [](mtiaIpcMemHandle_t& h) { h.reserved[kUidAt] ^= 0x01; }, mtiaErrorNotPermitted,
     "exported by user"},
};

TEST(IpcMemory, BadAndStaleHandles) {
    Channel toImporter, toExporter;
    const auto exporter = [&] {
        watchdog();
        void* p = nullptr;
        void* freed = nullptr;
        IPC_CHECK(mtiaMalloc(&p, 2 * kMiB) == mtiaSuccess);
        IPC_CHECK(mtiaMalloc(&freed, 2 * kMiB) == mtiaSuccess);
        mtiaIpcMemHandle_t h[2];
        IPC_CHECK(mtiaIpcGetMemHandle(&h[0], p) == mtiaSuccess);
        IPC_CHECK(mtiaIpcGetMemHandle(&h[1], freed) == mtiaSuccess);
        IPC_CHECK(mtiaFree(freed) ==
                  mtiaSuccess);  // nobody opened it: freed at once, the handle is stale
        IPC_CHECK(toImporter.send(h));
        char done = 0;
        IPC_CHECK(toExporter.receive(done));
        return 0;
    };
    const auto importer = [&] {
        watchdog();
        mtiaIpcMemHandle_t h[2];
        IPC_CHECK(toImporter.receive(h));
        void* p = nullptr;
        for (const DamagedHandle& c : kDamagedHandles) {
            mtiaIpcMemHandle_t bad = h[0];
            c.damage(bad);
            IPC_CHECK_ERROR_IN(c.what, mtiaIpcOpenMemHandle(&p, bad, 0), c.code, c.says);
        }
        mtiaIpcEventHandle_t asEvent;
        std::memcpy(&asEvent, &h[0], sizeof asEvent);
        mtiaEvent_t e = nullptr;
        IPC_CHECK_ERROR(mtiaIpcOpenEventHandle(&e, asEvent), mtiaErrorInvalidHandle,
                        "not an event handle");
        IPC_CHECK_ERROR(mtiaIpcOpenMemHandle(&p, h[1], 0), mtiaErrorInvalidHandle,
                        "freed by the exporting process");
        // The good one still opens after all that.
        IPC_CHECK(mtiaIpcOpenMemHandle(&p, h[0], 0) == mtiaSuccess);
        IPC_CHECK(mtiaIpcCloseMemHandle(p) == mtiaSuccess);
        const char done = 1;
        IPC_CHECK(toExporter.send(done));
        return 0;
    };
    expectExporterAndImporterPass(exporter, importer);
}

TEST(IpcMemory, KilledExporterLeavesMappingsValidAndHandlesStale) {
    Channel toImporter, toParent;
    const pid_t exporter = forkChild([&] {
        watchdog();
        void* p = nullptr;
        void* q = nullptr;
        IPC_CHECK(mtiaMalloc(&p, 4 * kMiB) == mtiaSuccess);
        IPC_CHECK(mtiaMalloc(&q, 4 * kMiB) == mtiaSuccess);
        IPC_CHECK(mtiaMemset(p, 0x33, 4 * kMiB) == mtiaSuccess);
        mtiaIpcMemHandle_t h[2];
        IPC_CHECK(mtiaIpcGetMemHandle(&h[0], p) == mtiaSuccess);
        IPC_CHECK(mtiaIpcGetMemHandle(&h[1], q) == mtiaSuccess);
        IPC_CHECK(toImporter.send(h));
        pause();  // until killed
        return 0;
    });
    KillOnExit guardExporter{exporter};
    Channel toImporterAfterKill;
    const pid_t importer = forkChild([&] {
        watchdog();
        mtiaIpcMemHandle_t h[2];
        IPC_CHECK(toImporter.receive(h));
        void* p = nullptr;
        IPC_CHECK(mtiaIpcOpenMemHandle(&p, h[0], 0) == mtiaSuccess);
        const char opened = 1;
        IPC_CHECK(toParent.send(opened));
        char killed = 0;
        IPC_CHECK(toImporterAfterKill.receive(killed));
        IPC_CHECK(filledWith(p, 4 * kMiB, 0x33));  // the pages outlive their exporter
        IPC_CHECK(mtiaMemset(p, 0x44, 4 * kMiB) == mtiaSuccess);
        IPC_CHECK(filledWith(p, 4 * kMiB, 0x44));
        void* q = nullptr;
        IPC_CHECK_ERROR(mtiaIpcOpenMemHandle(&q, h[1], 0), mtiaErrorInvalidHandle, "exited");
        IPC_CHECK_ERROR(mtiaIpcOpenMemHandle(&q, h[0], 0), mtiaErrorInvalidHandle, "exited");
        IPC_CHECK(mtiaIpcCloseMemHandle(p) == mtiaSuccess);
        return 0;
    });
    KillOnExit guardImporter{importer};
    char opened = 0;
    ASSERT_TRUE(toParent.receive(opened));
    killChild(exporter);
    const char killed = 1;
    ASSERT_TRUE(toImporterAfterKill.send(killed));
    EXPECT_EQ(waitChild(importer), 0);
}

// The exporter frees while the importer has the memory open: the free waits (the memory is neither
// reused nor given back), and completes once the importer is SIGKILLed.
TEST(IpcMemory, KilledImporterReleasesDeferredFree) {
    Channel toImporter, toExporter, toParent;
    const pid_t exporter = forkChild([&] {
        watchdog();
        IPC_CHECK(mtiaEmptyCache() == mtiaSuccess);
        size_t freeBefore = 0, total = 0;
        IPC_CHECK(mtiaMemGetInfo(&freeBefore, &total) == mtiaSuccess);
        void* p = nullptr;
        IPC_CHECK(mtiaMalloc(&p, 32 * kMiB) == mtiaSuccess);
        mtiaIpcMemHandle_t h;
        IPC_CHECK(mtiaIpcGetMemHandle(&h, p) == mtiaSuccess);
        IPC_CHECK(toImporter.send(h));
        char opened = 0;
        IPC_CHECK(toExporter.receive(opened));
        IPC_CHECK(mtiaFree(p) == mtiaSuccess);  // deferred: the importer has it open
        IPC_CHECK_ERROR(mtiaFree(p), mtiaErrorInvalidValue, "already freed");
        IPC_CHECK(mtiaEmptyCache() == mtiaSuccess);
        size_t freeDeferred = 0;
        IPC_CHECK(mtiaMemGetInfo(&freeDeferred, &total) == mtiaSuccess);
        IPC_CHECK(freeDeferred + 32 * kMiB <= freeBefore);  // still held
        void* q = nullptr;
        IPC_CHECK(mtiaMalloc(&q, 32 * kMiB) == mtiaSuccess);
        IPC_CHECK(q != p);  // not reused while in limbo
        IPC_CHECK(mtiaFree(q) == mtiaSuccess);
        const char freed = 1;
        IPC_CHECK(toParent.send(freed));
        char killed = 0;
        IPC_CHECK(toExporter.receive(killed));
        IPC_CHECK(mtiaEmptyCache() ==
                  mtiaSuccess);  // completes the deferred free, then gives it back
        size_t freeAfter = 0;
        IPC_CHECK(mtiaMemGetInfo(&freeAfter, &total) == mtiaSuccess);
        IPC_CHECK(freeAfter == freeBefore);
        return 0;
    });
    KillOnExit guardExporter{exporter};
    const pid_t importer = forkChild([&] {
        watchdog();
        mtiaIpcMemHandle_t h;
        IPC_CHECK(toImporter.receive(h));
        void* p = nullptr;
        IPC_CHECK(mtiaIpcOpenMemHandle(&p, h, 0) == mtiaSuccess);
        const char opened = 1;
        IPC_CHECK(toExporter.send(opened));
        pause();  // until killed
        return 0;
    });
    KillOnExit guardImporter{importer};
    char freed = 0;
    ASSERT_TRUE(toParent.receive(freed));
    killChild(importer);
    const char killed = 1;
    ASSERT_TRUE(toExporter.send(killed));
    EXPECT_EQ(waitChild(exporter), 0);
}

// A handle freed after the importer closed it normally: the free is immediate, the handle stale.
TEST(IpcMemory, ClosedImportLetsTheFreeComplete) {
    Channel toImporter, toExporter, toImporter2;
    const auto exporter = [&] {
        watchdog();
        void* p = nullptr;
        IPC_CHECK(mtiaMalloc(&p, 2 * kMiB) == mtiaSuccess);
        mtiaIpcMemHandle_t h;
        IPC_CHECK(mtiaIpcGetMemHandle(&h, p) == mtiaSuccess);
        IPC_CHECK(toImporter.send(h));
        char closed = 0;
        IPC_CHECK(toExporter.receive(closed));
        IPC_CHECK(mtiaFree(p) == mtiaSuccess);
        IPC_CHECK_ERROR(mtiaFree(p), mtiaErrorInvalidValue,
                        "not a live allocation");  // freed for real
        const char freed = 1;
        IPC_CHECK(toImporter2.send(freed));
        IPC_CHECK(toExporter.receive(closed));
        return 0;
    };
    const auto importer = [&] {
        watchdog();
        mtiaIpcMemHandle_t h;
        IPC_CHECK(toImporter.receive(h));
        void* p = nullptr;
        IPC_CHECK(mtiaIpcOpenMemHandle(&p, h, 0) == mtiaSuccess);
        IPC_CHECK(mtiaIpcCloseMemHandle(p) == mtiaSuccess);
        char step = 1;
        IPC_CHECK(toExporter.send(step));
        IPC_CHECK(toImporter2.receive(step));
        IPC_CHECK_ERROR(mtiaIpcOpenMemHandle(&p, h, 0), mtiaErrorInvalidHandle, "freed");
        IPC_CHECK(toExporter.send(step));
        return 0;
    };
    expectExporterAndImporterPass(exporter, importer);
}

TEST(IpcMemory, SealedMemoryFileCannotBeResized) {
    Channel toParent, toExporter;
    const pid_t exporter = forkChild([&] {
        watchdog();
        void* p = nullptr;
        IPC_CHECK(mtiaMalloc(&p, 2 * kMiB) == mtiaSuccess);
        const char ready = 1;
        IPC_CHECK(toParent.send(ready));
        char done = 0;
        IPC_CHECK(toExporter.receive(done));
        IPC_CHECK(mtiaMemset(p, 7, 4096) == mtiaSuccess);  // the memory still works
        IPC_CHECK(filledWith(p, 4096, 7));
        return 0;
    });
    KillOnExit guardExporter{exporter};
    char ready = 0;
    ASSERT_TRUE(toParent.receive(ready));
    const int n = memoryFileOf(exporter);
    ASSERT_GE(n, 0) << "the exporter has no device memory file";
    const std::string path = "/proc/" + std::to_string(exporter) + "/fd/" + std::to_string(n);
    const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
    ASSERT_GE(fd, 0) << path << ": " << std::strerror(errno);
    struct stat st {};
    ASSERT_EQ(fstat(fd, &st), 0);
    errno = 0;
    EXPECT_NE(ftruncate(fd, 0), 0);
    EXPECT_EQ(errno, EPERM);
    errno = 0;
    EXPECT_NE(ftruncate(fd, st.st_size + 4096), 0);
    EXPECT_EQ(errno, EPERM);
    close(fd);
    const char done = 1;
    ASSERT_TRUE(toExporter.send(done));
    EXPECT_EQ(waitChild(exporter), 0);
}

TEST(IpcMemory, AnotherUsersHandleIsRefused) {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to run a child as another user";
    Channel toImporter, toExporter;
    const auto exporter = [&] {
        watchdog();
        void* p = nullptr;
        IPC_CHECK(mtiaMalloc(&p, 2 * kMiB) == mtiaSuccess);
        mtiaIpcMemHandle_t h;
        IPC_CHECK(mtiaIpcGetMemHandle(&h, p) == mtiaSuccess);
        IPC_CHECK(toImporter.send(h));
        char done = 0;
        IPC_CHECK(toExporter.receive(done));
        return 0;
    };
    const auto importer = [&] {
        watchdog();
        if (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0) return 200;
        mtiaIpcMemHandle_t h;
        IPC_CHECK(toImporter.receive(h));
        void* p = nullptr;
        IPC_CHECK_ERROR(mtiaIpcOpenMemHandle(&p, h, 0), mtiaErrorNotPermitted,
                        "exported by user 0");
        const char done = 1;
        IPC_CHECK(toExporter.send(done));
        return 0;
    };
    expectExporterAndImporterPass(exporter, importer);
    // The other user's registry of this machine, which its child created.
    const char* machine = getenv("MTIA_SIM_MACHINE");
    if (machine != nullptr) {
        registry::UserDirectory dir;
        if (registry::userDirectory(65534, false, dir)) {
            for (const std::string& name : registry::listMachines(65534))
                if (name.find(std::string(".") + machine + ".") != std::string::npos) {
                    unlink(registry::objectPath(dir.path, name).c_str());
                    unlink(registry::lockPath(dir.path, name).c_str());
                }
            rmdir((dir.path + "/requests").c_str());
            rmdir(dir.path.c_str());  // only when nothing else of that user is left in it
        }
    }
}

// Imported memory is the exporter's: the importer can still allocate what is left of the device.
TEST(IpcMemory, ImportsAreNotChargedToTheImporter) {
    Channel toImporter, toExporter;
    const auto exporter = [&] {
        watchdog();
        size_t free = 0, total = 0;
        IPC_CHECK(mtiaMemGetInfo(&free, &total) == mtiaSuccess);
        void* p = nullptr;
        const size_t big = total / 2 + total / 8;  // more than half the device
        IPC_CHECK(mtiaMalloc(&p, big) == mtiaSuccess);
        mtiaIpcMemHandle_t h;
        IPC_CHECK(mtiaIpcGetMemHandle(&h, p) == mtiaSuccess);
        IPC_CHECK(toImporter.send(h));
        char done = 0;
        IPC_CHECK(toExporter.receive(done));
        return 0;
    };
    const auto importer = [&] {
        watchdog();
        mtiaIpcMemHandle_t h;
        IPC_CHECK(toImporter.receive(h));
        size_t free = 0, total = 0;
        IPC_CHECK(mtiaMemGetInfo(&free, &total) == mtiaSuccess);
        void* p = nullptr;
        IPC_CHECK(mtiaIpcOpenMemHandle(&p, h, 0) == mtiaSuccess);
        size_t freeAfter = 0;
        IPC_CHECK(mtiaMemGetInfo(&freeAfter, &total) == mtiaSuccess);
        IPC_CHECK(freeAfter == free);  // opening took nothing
        void* mine = nullptr;
        IPC_CHECK(mtiaMalloc(&mine, total / 4) ==
                  mtiaSuccess);  // fits only if the import is not charged
        IPC_CHECK(mtiaFree(mine) == mtiaSuccess);
        IPC_CHECK(mtiaIpcCloseMemHandle(p) == mtiaSuccess);
        const char done = 1;
        IPC_CHECK(toExporter.send(done));
        return 0;
    };
    expectExporterAndImporterPass(exporter, importer);
}

// A process exports at most 64 allocations at once; the 65th is a clear error until one is freed.
TEST(IpcMemory, FullExportTableIsAClearError) {
    const pid_t child = forkChild([&] {
        watchdog();
        std::vector<void*> blocks(65, nullptr);
        for (void*& b : blocks) IPC_CHECK(mtiaMalloc(&b, 4096) == mtiaSuccess);
        mtiaIpcMemHandle_t h;
        for (int i = 0; i < 64; ++i) IPC_CHECK(mtiaIpcGetMemHandle(&h, blocks[i]) == mtiaSuccess);
        IPC_CHECK_ERROR(mtiaIpcGetMemHandle(&h, blocks[64]), mtiaErrorMemoryAllocation,
                        "64 exported allocations");
        IPC_CHECK(mtiaFree(blocks[0]) ==
                  mtiaSuccess);  // nobody imported it: its record is free again
        IPC_CHECK(mtiaIpcGetMemHandle(&h, blocks[64]) == mtiaSuccess);
        for (int i = 1; i < 65; ++i) IPC_CHECK(mtiaFree(blocks[i]) == mtiaSuccess);
        return 0;
    });
    KillOnExit guard{child};
    EXPECT_EQ(waitChild(child), 0);
}

TEST(IpcMemory, NotLegalDuringGlobalCapture) {
    const pid_t child = forkChild([&] {
        watchdog();
        void* p = nullptr;
        IPC_CHECK(mtiaMalloc(&p, 1 * kMiB) == mtiaSuccess);
        mtiaStream_t s = nullptr;
        IPC_CHECK(mtiaStreamCreate(&s) == mtiaSuccess);
        IPC_CHECK(mtiaStreamBeginCapture(s, mtiaStreamCaptureModeGlobal) == mtiaSuccess);
        mtiaIpcMemHandle_t h;
        IPC_CHECK_ERROR(mtiaIpcGetMemHandle(&h, p), mtiaErrorStreamCaptureUnsupported,
                        "mtiaIpcGetMemHandle");
        mtiaGraph_t g = nullptr;
        (void)mtiaStreamEndCapture(s, &g);
        if (g != nullptr) (void)mtiaGraphDestroy(g);
        IPC_CHECK(mtiaIpcGetMemHandle(&h, p) == mtiaSuccess);
        IPC_CHECK(mtiaStreamDestroy(s) == mtiaSuccess);
        IPC_CHECK(mtiaFree(p) == mtiaSuccess);
        return 0;
    });
    KillOnExit guard{child};
    EXPECT_EQ(waitChild(child), 0);
}

// The runtime header's offset and size are checked against the exported range: a handle whose range
// was modified is refused instead of letting copies run past the mapping.
TEST(IpcMemory, AHandleWithAModifiedRangeIsRefused) {
    constexpr size_t kOffsetAt = 8, kSizeAt = 16;  // in the runtime header (ipc_memory.hpp)
    Channel toImporter, toExporter;
    const auto exporter = [&] {
        watchdog();
        void* p = nullptr;
        IPC_CHECK(mtiaMalloc(&p, 4 * kMiB) == mtiaSuccess);
        mtiaIpcMemHandle_t h;
        IPC_CHECK(mtiaIpcGetMemHandle(&h, p) == mtiaSuccess);
        IPC_CHECK(toImporter.send(h));
        char done = 0;
        IPC_CHECK(toExporter.receive(done));
        IPC_CHECK(mtiaFree(p) == mtiaSuccess);
        return 0;
    };
    const auto importer = [&] {
        watchdog();
        mtiaIpcMemHandle_t h;
        IPC_CHECK(toImporter.receive(h));
        void* p = nullptr;
        for (int round = 0; round < 2;
             ++round) {  // a first open, and a second one of an open export
            uint64_t size = 0;
            std::memcpy(&size, h.reserved + kSizeAt, sizeof size);
            const struct {
                const char* what;
                size_t at;  // in the runtime header
                uint64_t value;
                size_t bytes;  // of the field
            } ranges[] = {
                {"bigger", kSizeAt, size + (uint64_t{1} << 30), sizeof(uint64_t)},
                {"shifted", kOffsetAt, uint64_t{1} << 30, sizeof(uint32_t)},
                {"empty", kSizeAt, 0, sizeof(uint64_t)},
            };
            for (const auto& c : ranges) {
                mtiaIpcMemHandle_t modified = h;
                std::memcpy(modified.reserved + c.at, &c.value,
                            c.bytes);  // little-endian: the low bytes
                void* q = nullptr;
                IPC_CHECK_ERROR_IN(c.what, mtiaIpcOpenMemHandle(&q, modified, 0),
                                   mtiaErrorInvalidHandle, "handle does not match");
            }
            if (round == 0) IPC_CHECK(mtiaIpcOpenMemHandle(&p, h, 0) == mtiaSuccess);
        }
        // The refused opens left no count behind: one close is the last.
        IPC_CHECK(mtiaMemset(p, 0x11, 4 * kMiB) == mtiaSuccess);
        IPC_CHECK(mtiaIpcCloseMemHandle(p) == mtiaSuccess);
        IPC_CHECK_ERROR(mtiaIpcCloseMemHandle(p), mtiaErrorInvalidValue, "not an open IPC mapping");
        const char done = 1;
        IPC_CHECK(toExporter.send(done));
        return 0;
    };
    expectExporterAndImporterPass(exporter, importer);
}

// A forked child of an importer cannot use the runtime at all (as in CUDA: Note [fork] in
// runtime/context/runtime.cpp): it can neither close the parent's mappings, use its imported
// events, nor open the handles again, and gets InitializationError at once; the parent's opens stay
// as they were.
TEST(IpcMemory, AForkedChildOfAnImporterCannotUseTheRuntime) {
    struct Sent {
        mtiaIpcMemHandle_t a;
        mtiaIpcMemHandle_t b;
        mtiaIpcEventHandle_t event;
    };
    Channel toImporter, toExporter;
    const auto exporter = [&] {
        watchdog();
        void *a = nullptr, *b = nullptr;
        IPC_CHECK(mtiaMalloc(&a, 2 * kMiB) == mtiaSuccess);
        IPC_CHECK(mtiaMalloc(&b, 2 * kMiB) == mtiaSuccess);
        IPC_CHECK(mtiaMemset(b, 0x3C, 2 * kMiB) == mtiaSuccess);
        mtiaEvent_t e = nullptr;
        IPC_CHECK(mtiaEventCreateWithFlags(&e, mtiaEventInterprocess | mtiaEventDisableTiming) ==
                  mtiaSuccess);
        Sent h;
        IPC_CHECK(mtiaIpcGetMemHandle(&h.a, a) == mtiaSuccess);
        IPC_CHECK(mtiaIpcGetMemHandle(&h.b, b) == mtiaSuccess);
        IPC_CHECK(mtiaIpcGetEventHandle(&h.event, e) == mtiaSuccess);
        IPC_CHECK(toImporter.send(h));
        char done = 0;
        IPC_CHECK(toExporter.receive(done));
        IPC_CHECK(mtiaEventDestroy(e) == mtiaSuccess);
        IPC_CHECK(mtiaFree(a) == mtiaSuccess);
        IPC_CHECK(mtiaFree(b) == mtiaSuccess);
        return 0;
    };
    const auto importer = [&] {
        watchdog();
        Sent h;
        IPC_CHECK(toImporter.receive(h));
        void *a = nullptr, *b = nullptr;
        mtiaEvent_t e = nullptr;
        // Two imports, the first closed again: the parent's record of b is not the child's first
        // free one.
        IPC_CHECK(mtiaIpcOpenMemHandle(&a, h.a, 0) == mtiaSuccess);
        IPC_CHECK(mtiaIpcOpenMemHandle(&b, h.b, 0) == mtiaSuccess);
        IPC_CHECK(mtiaIpcCloseMemHandle(a) == mtiaSuccess);
        IPC_CHECK(mtiaIpcOpenEventHandle(&e, h.event) == mtiaSuccess);
        const pid_t child = forkChild([&] {
            IPC_CHECK_ERROR(mtiaIpcCloseMemHandle(b), mtiaErrorInitializationError,
                            "fork of one that had initialised");
            IPC_CHECK_ERROR(mtiaEventQuery(e), mtiaErrorInitializationError,
                            "fork of one that had initialised");
            void* mine = nullptr;
            IPC_CHECK_ERROR(mtiaIpcOpenMemHandle(&mine, h.b, 0), mtiaErrorInitializationError,
                            "fork of one that had initialised");
            IPC_CHECK(mine == nullptr);
            return 0;
        });
        IPC_CHECK(waitChild(child) == 0);
        // The parent's open of b and its event are as they were.
        IPC_CHECK(filledWith(b, 2 * kMiB, 0x3C));
        IPC_CHECK(mtiaEventQuery(e) == mtiaSuccess);
        IPC_CHECK(mtiaEventDestroy(e) == mtiaSuccess);
        IPC_CHECK(mtiaIpcCloseMemHandle(b) == mtiaSuccess);
        IPC_CHECK_ERROR(mtiaIpcCloseMemHandle(b), mtiaErrorInvalidValue, "not an open IPC mapping");
        const char done = 1;
        IPC_CHECK(toExporter.send(done));
        return 0;
    };
    expectExporterAndImporterPass(exporter, importer);
}

}  // namespace
}  // namespace mtia::ipc::test
