// IPC event handles between processes (mtia_ipc.h): ordering an importer's
// reads after the exporter's work, query and synchronize of an imported
// event, refused records, and waits that end with an error instead of hanging
// when the exporter destroys the event or is killed. Runs as test ipc.
#include "ipc_test_util.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

namespace mtia::ipc::test {
namespace {

struct Handles {
    mtiaIpcMemHandle_t mem;
    mtiaIpcEventHandle_t event;
};

// A host function that blocks its stream until the pipe it reads from says go (or its writer dies).
void blockUntilSaid(void* userData) {
    char go = 0;
    (void)static_cast<Channel*>(userData)->receive(go, 30000);
}

TEST(IpcEvent, OrdersTheImportersReadsAfterTheExportersWork) {
    Channel toImporter, toExporter, release;
    const auto exporter = [&] {
        watchdog();
        const size_t size = 64 * kMiB;
        void* p = nullptr;
        IPC_CHECK(mtiaMalloc(&p, size) == mtiaSuccess);
        IPC_CHECK(mtiaMemset(p, 0, size) == mtiaSuccess);
        mtiaEvent_t e = nullptr;
        IPC_CHECK_ERROR(mtiaEventCreateWithFlags(&e, mtiaEventInterprocess), mtiaErrorInvalidValue,
                        "DisableTiming");
        IPC_CHECK(mtiaEventCreateWithFlags(&e, mtiaEventInterprocess | mtiaEventDisableTiming) ==
                  mtiaSuccess);
        mtiaEvent_t local = nullptr;
        IPC_CHECK(mtiaEventCreateWithFlags(&local, mtiaEventDisableTiming) == mtiaSuccess);
        Handles h;
        IPC_CHECK_ERROR(mtiaIpcGetEventHandle(&h.event, local), mtiaErrorInvalidValue,
                        "mtiaEventInterprocess");
        IPC_CHECK(mtiaIpcGetMemHandle(&h.mem, p) == mtiaSuccess);
        IPC_CHECK(mtiaIpcGetEventHandle(&h.event, e) == mtiaSuccess);
        mtiaEvent_t self = nullptr;
        IPC_CHECK_ERROR(mtiaIpcOpenEventHandle(&self, h.event), mtiaErrorInvalidValue,
                        "exported by this process");
        mtiaStream_t s = nullptr;
        IPC_CHECK(mtiaStreamCreate(&s) == mtiaSuccess);
        // The stream is held until the importer has queued its wait: the record cannot be complete
        // before.
        IPC_CHECK(mtiaLaunchHostFunc(s, blockUntilSaid, &release) == mtiaSuccess);
        IPC_CHECK(mtiaMemsetAsync(p, 0x5A, size, s) == mtiaSuccess);
        IPC_CHECK(mtiaEventRecord(e, s) == mtiaSuccess);
        IPC_CHECK(toImporter.send(h));
        char done = 0;
        IPC_CHECK(toExporter.receive(done));
        IPC_CHECK(mtiaStreamSynchronize(s) == mtiaSuccess);
        IPC_CHECK(mtiaEventDestroy(e) == mtiaSuccess);
        IPC_CHECK(mtiaEventDestroy(local) == mtiaSuccess);
        IPC_CHECK(mtiaStreamDestroy(s) == mtiaSuccess);
        IPC_CHECK(mtiaFree(p) == mtiaSuccess);
        return 0;
    };
    Channel toParent;
    const auto importer = [&] {
        watchdog();
        const size_t size = 64 * kMiB;
        Handles h;
        IPC_CHECK(toImporter.receive(h));
        void* p = nullptr;
        mtiaEvent_t e = nullptr;
        IPC_CHECK(mtiaIpcOpenMemHandle(&p, h.mem, 0) == mtiaSuccess);
        IPC_CHECK(mtiaIpcOpenEventHandle(&e, h.event) == mtiaSuccess);
        IPC_CHECK(mtiaEventQuery(e) == mtiaErrorNotReady);  // the exporter's stream is held
        mtiaStream_t s = nullptr;
        IPC_CHECK(mtiaStreamCreate(&s) == mtiaSuccess);
        IPC_CHECK(mtiaStreamWaitEvent(s, e, 0) == mtiaSuccess);
        const char queued = 1;
        IPC_CHECK(toParent.send(queued));  // the parent lets the exporter's stream go
        std::vector<unsigned char> host(size, 0);
        IPC_CHECK(mtiaMemcpyAsync(host.data(), p, size, mtiaMemcpyDeviceToHost, s) == mtiaSuccess);
        IPC_CHECK(mtiaStreamSynchronize(s) == mtiaSuccess);
        size_t wrong = 0;
        for (unsigned char c : host) wrong += c != 0x5A;
        IPC_CHECK(wrong == 0);
        IPC_CHECK(mtiaEventQuery(e) == mtiaSuccess);
        IPC_CHECK(mtiaEventSynchronize(e) == mtiaSuccess);
        mtiaStream_t other = nullptr;
        IPC_CHECK(mtiaStreamCreate(&other) == mtiaSuccess);
        IPC_CHECK_ERROR(mtiaEventRecord(e, other), mtiaErrorNotSupported,
                        "only the exporting process records");
        mtiaIpcEventHandle_t again;
        IPC_CHECK_ERROR(mtiaIpcGetEventHandle(&again, e), mtiaErrorInvalidValue,
                        "opened from an IPC handle");
        IPC_CHECK(mtiaEventDestroy(e) == mtiaSuccess);
        IPC_CHECK(mtiaStreamDestroy(s) == mtiaSuccess);
        IPC_CHECK(mtiaStreamDestroy(other) == mtiaSuccess);
        IPC_CHECK(mtiaIpcCloseMemHandle(p) == mtiaSuccess);
        const char done = 1;
        IPC_CHECK(toExporter.send(done));
        return 0;
    };
    expectExporterAndImporterPass(exporter, importer,
                                  [&] { return releaseWhenSaid(toParent, release); });
}

// Waits see the latest record as of the call: a stream that waits for the exporter's record on a
// held stream keeps waiting when a later record on another stream completes, while a query after
// that later record sees it complete.
TEST(IpcEvent, ALaterRecordDoesNotReleaseWaitsForAnEarlierOne) {
    Channel toImporter, toExporter, toParent, release;
    const auto exporter = [&] {
        watchdog();
        mtiaEvent_t e = nullptr;
        IPC_CHECK(mtiaEventCreateWithFlags(&e, mtiaEventInterprocess | mtiaEventDisableTiming) ==
                  mtiaSuccess);
        mtiaStream_t held = nullptr, free = nullptr;
        IPC_CHECK(mtiaStreamCreate(&held) == mtiaSuccess);
        IPC_CHECK(mtiaStreamCreate(&free) == mtiaSuccess);
        mtiaIpcEventHandle_t h;
        IPC_CHECK(mtiaIpcGetEventHandle(&h, e) == mtiaSuccess);
        IPC_CHECK(mtiaLaunchHostFunc(held, blockUntilSaid, &release) == mtiaSuccess);
        IPC_CHECK(mtiaEventRecord(e, held) == mtiaSuccess);
        IPC_CHECK(toImporter.send(h));
        char step = 0;
        IPC_CHECK(toExporter.receive(step));  // the importer waits for the first record
        IPC_CHECK(mtiaEventRecord(e, free) == mtiaSuccess);
        IPC_CHECK(mtiaStreamSynchronize(free) == mtiaSuccess);
        IPC_CHECK(toImporter.send(step));
        IPC_CHECK(toExporter.receive(step));
        IPC_CHECK(mtiaStreamSynchronize(held) == mtiaSuccess);
        IPC_CHECK(mtiaEventDestroy(e) == mtiaSuccess);
        return 0;
    };
    const auto importer = [&] {
        watchdog();
        mtiaIpcEventHandle_t h;
        IPC_CHECK(toImporter.receive(h));
        mtiaEvent_t e = nullptr;
        IPC_CHECK(mtiaIpcOpenEventHandle(&e, h) == mtiaSuccess);
        mtiaStream_t s = nullptr;
        IPC_CHECK(mtiaStreamCreate(&s) == mtiaSuccess);
        IPC_CHECK(mtiaStreamWaitEvent(s, e, 0) == mtiaSuccess);
        char step = 1;
        IPC_CHECK(toExporter.send(step));
        IPC_CHECK(toImporter.receive(step));  // the second record completed
        IPC_CHECK(mtiaEventQuery(e) == mtiaSuccess);
        IPC_CHECK(mtiaEventSynchronize(e) == mtiaSuccess);
        IPC_CHECK(mtiaStreamQuery(s) == mtiaErrorNotReady);  // still waiting for the first record
        IPC_CHECK(toParent.send(step));                      // the parent lets the held stream go
        IPC_CHECK(mtiaStreamSynchronize(s) == mtiaSuccess);
        IPC_CHECK(toExporter.send(step));
        IPC_CHECK(mtiaEventDestroy(e) == mtiaSuccess);
        IPC_CHECK(mtiaStreamDestroy(s) == mtiaSuccess);
        return 0;
    };
    expectExporterAndImporterPass(exporter, importer,
                                  [&] { return releaseWhenSaid(toParent, release); });
}

// The exporter records on a held stream and then destroys the event (or is killed): the importer's
// synchronize and stream wait end, with an error, instead of hanging.
void destroyedOrKilled(bool kill) {
    Channel toImporter, toExporter, toParent, release;
    const pid_t exporter = forkChild([&] {
        watchdog();
        mtiaEvent_t e = nullptr;
        IPC_CHECK(mtiaEventCreateWithFlags(&e, mtiaEventInterprocess | mtiaEventDisableTiming) ==
                  mtiaSuccess);
        mtiaStream_t s = nullptr;
        IPC_CHECK(mtiaStreamCreate(&s) == mtiaSuccess);
        IPC_CHECK(mtiaLaunchHostFunc(s, blockUntilSaid, &release) == mtiaSuccess);
        IPC_CHECK(mtiaEventRecord(e, s) == mtiaSuccess);
        mtiaIpcEventHandle_t h;
        IPC_CHECK(mtiaIpcGetEventHandle(&h, e) == mtiaSuccess);
        IPC_CHECK(toImporter.send(h));
        char opened = 0;
        IPC_CHECK(toExporter.receive(opened));
        if (kill) pause();  // until killed
        // Destroyed with its record still queued behind the held host function.
        IPC_CHECK(mtiaEventDestroy(e) == mtiaSuccess);
        return 0;
    });
    KillOnExit guardExporter{exporter};
    const pid_t importer = forkChild([&] {
        watchdog();
        mtiaIpcEventHandle_t h;
        IPC_CHECK(toImporter.receive(h));
        mtiaEvent_t e = nullptr;
        IPC_CHECK(mtiaIpcOpenEventHandle(&e, h) == mtiaSuccess);
        IPC_CHECK(mtiaEventQuery(e) == mtiaErrorNotReady);
        mtiaStream_t s = nullptr;
        IPC_CHECK(mtiaStreamCreate(&s) == mtiaSuccess);
        IPC_CHECK(mtiaStreamWaitEvent(s, e, 0) == mtiaSuccess);
        const char opened = 1;
        IPC_CHECK(toExporter.send(opened));
        IPC_CHECK(toParent.send(opened));
        const mtiaError_t st = mtiaEventSynchronize(e);
        IPC_CHECK(st == mtiaErrorInvalidHandle);
        IPC_CHECK(std::strstr(mtiaGetLastErrorMessage(), "destroyed by its exporting process") !=
                  nullptr);
        IPC_CHECK(mtiaEventQuery(e) == mtiaErrorInvalidHandle);
        IPC_CHECK(mtiaStreamSynchronize(s) == mtiaSuccess);  // the stream's wait ended too
        IPC_CHECK(mtiaEventDestroy(e) == mtiaSuccess);
        IPC_CHECK(mtiaStreamDestroy(s) == mtiaSuccess);
        return 0;
    });
    KillOnExit guardImporter{importer};
    char opened = 0;
    ASSERT_TRUE(toParent.receive(opened));
    if (kill) killChild(exporter);
    EXPECT_EQ(waitChild(importer), 0);
    if (!kill) {
        const char go = 1;
        ASSERT_TRUE(release.send(go));
        EXPECT_EQ(waitChild(exporter), 0);
    }
}

TEST(IpcEvent, WaitsEndWhenTheExporterDestroysTheEvent) {
    destroyedOrKilled(false);
}

TEST(IpcEvent, WaitsEndWhenTheExporterIsKilled) {
    destroyedOrKilled(true);
}

// An imported event is never recorded in the importer, in capture or not, and a capturing stream
// cannot wait for it: a graph would replay without waiting for the exporter's work.
TEST(IpcEvent, CaptureRefusesRecordsOfAndWaitsForAnImportedEvent) {
    Channel toImporter, toExporter;
    const auto exporter = [&] {
        watchdog();
        mtiaEvent_t e = nullptr;
        IPC_CHECK(mtiaEventCreateWithFlags(&e, mtiaEventInterprocess | mtiaEventDisableTiming) ==
                  mtiaSuccess);
        mtiaStream_t s = nullptr;
        IPC_CHECK(mtiaStreamCreate(&s) == mtiaSuccess);
        IPC_CHECK(mtiaEventRecord(e, s) ==
                  mtiaSuccess);  // recorded: the importer's wait has a record to wait on
        mtiaIpcEventHandle_t h;
        IPC_CHECK(mtiaIpcGetEventHandle(&h, e) == mtiaSuccess);
        IPC_CHECK(toImporter.send(h));
        char done = 0;
        IPC_CHECK(toExporter.receive(done));
        IPC_CHECK(mtiaStreamSynchronize(s) == mtiaSuccess);
        IPC_CHECK(mtiaEventDestroy(e) == mtiaSuccess);
        IPC_CHECK(mtiaStreamDestroy(s) == mtiaSuccess);
        return 0;
    };
    const auto importer = [&] {
        watchdog();
        mtiaIpcEventHandle_t h;
        IPC_CHECK(toImporter.receive(h));
        mtiaEvent_t e = nullptr;
        IPC_CHECK(mtiaIpcOpenEventHandle(&e, h) == mtiaSuccess);
        mtiaStream_t s = nullptr, other = nullptr;
        IPC_CHECK(mtiaStreamCreate(&s) == mtiaSuccess);
        IPC_CHECK(mtiaStreamCreate(&other) == mtiaSuccess);
        IPC_CHECK_ERROR(mtiaEventRecordWithFlags(e, other, 0), mtiaErrorNotSupported,
                        "only the exporting process records");
        IPC_CHECK(mtiaStreamBeginCapture(s, mtiaStreamCaptureModeRelaxed) == mtiaSuccess);
        IPC_CHECK_ERROR(mtiaEventRecord(e, s), mtiaErrorNotSupported,
                        "only the exporting process records");
        IPC_CHECK_ERROR(mtiaEventRecordWithFlags(e, s, mtiaEventRecordExternal),
                        mtiaErrorNotSupported, "only the exporting process records");
        mtiaStreamCaptureStatus status = mtiaStreamCaptureStatusNone;
        IPC_CHECK(mtiaStreamIsCapturing(s, &status) == mtiaSuccess);
        IPC_CHECK(status == mtiaStreamCaptureStatusActive);  // a refused record does not invalidate
        IPC_CHECK_ERROR(mtiaStreamWaitEvent(s, e, 0), mtiaErrorStreamCaptureUnsupported,
                        "opened from an IPC handle");
        mtiaGraph_t g = nullptr;
        IPC_CHECK(mtiaStreamEndCapture(s, &g) == mtiaErrorStreamCaptureInvalidated);
        IPC_CHECK(mtiaStreamBeginCapture(s, mtiaStreamCaptureModeRelaxed) == mtiaSuccess);
        IPC_CHECK_ERROR(mtiaStreamWaitEvent(s, e, mtiaEventWaitExternal),
                        mtiaErrorStreamCaptureUnsupported, "opened from an IPC handle");
        IPC_CHECK(mtiaStreamEndCapture(s, &g) == mtiaErrorStreamCaptureInvalidated);
        IPC_CHECK(mtiaStreamWaitEvent(s, e, 0) ==
                  mtiaSuccess);  // outside capture it waits as before
        IPC_CHECK(mtiaStreamSynchronize(s) == mtiaSuccess);
        IPC_CHECK(mtiaEventDestroy(e) == mtiaSuccess);
        IPC_CHECK(mtiaStreamDestroy(s) == mtiaSuccess);
        IPC_CHECK(mtiaStreamDestroy(other) == mtiaSuccess);
        const char done = 1;
        IPC_CHECK(toExporter.send(done));
        return 0;
    };
    expectExporterAndImporterPass(exporter, importer);
}

// An event the exporter destroyed is dead for its importers even when its last record completed (or
// it was never recorded), and a new event that reuses its registry record does not revive the old
// handle.
TEST(IpcEvent, ADestroyedEventStaysDeadWhenItsRecordIsReused) {
    struct Pair {
        mtiaIpcEventHandle_t recorded;
        mtiaIpcEventHandle_t never;
    };
    Channel toImporter, toExporter;
    const auto exporter = [&] {
        watchdog();
        mtiaEvent_t e = nullptr, never = nullptr;
        IPC_CHECK(mtiaEventCreateWithFlags(&e, mtiaEventInterprocess | mtiaEventDisableTiming) ==
                  mtiaSuccess);
        IPC_CHECK(mtiaEventCreateWithFlags(&never, mtiaEventInterprocess |
                                                       mtiaEventDisableTiming) == mtiaSuccess);
        mtiaStream_t s = nullptr;
        IPC_CHECK(mtiaStreamCreate(&s) == mtiaSuccess);
        Pair h;
        IPC_CHECK(mtiaIpcGetEventHandle(&h.recorded, e) == mtiaSuccess);
        IPC_CHECK(mtiaIpcGetEventHandle(&h.never, never) == mtiaSuccess);
        IPC_CHECK(mtiaEventRecord(e, s) == mtiaSuccess);
        IPC_CHECK(mtiaStreamSynchronize(s) == mtiaSuccess);
        IPC_CHECK(toImporter.send(h));
        char step = 0;
        IPC_CHECK(toExporter.receive(step));  // opened
        IPC_CHECK(mtiaEventDestroy(e) == mtiaSuccess);
        IPC_CHECK(mtiaEventDestroy(never) == mtiaSuccess);
        // New events take the freed records over; their records complete.
        mtiaEvent_t reuse[2] = {nullptr, nullptr};
        for (mtiaEvent_t& r : reuse) {
            IPC_CHECK(mtiaEventCreateWithFlags(&r, mtiaEventInterprocess |
                                                       mtiaEventDisableTiming) == mtiaSuccess);
            mtiaIpcEventHandle_t ignored;
            IPC_CHECK(mtiaIpcGetEventHandle(&ignored, r) == mtiaSuccess);
            IPC_CHECK(mtiaEventRecord(r, s) == mtiaSuccess);
            IPC_CHECK(mtiaEventRecord(r, s) == mtiaSuccess);
        }
        IPC_CHECK(mtiaStreamSynchronize(s) == mtiaSuccess);
        IPC_CHECK(toImporter.send(step));
        IPC_CHECK(toExporter.receive(step));  // checked
        for (mtiaEvent_t r : reuse) IPC_CHECK(mtiaEventDestroy(r) == mtiaSuccess);
        IPC_CHECK(mtiaStreamDestroy(s) == mtiaSuccess);
        return 0;
    };
    const auto importer = [&] {
        watchdog();
        Pair h;
        IPC_CHECK(toImporter.receive(h));
        mtiaEvent_t e = nullptr, never = nullptr;
        IPC_CHECK(mtiaIpcOpenEventHandle(&e, h.recorded) == mtiaSuccess);
        IPC_CHECK(mtiaIpcOpenEventHandle(&never, h.never) == mtiaSuccess);
        IPC_CHECK(mtiaEventQuery(e) == mtiaSuccess);
        IPC_CHECK(mtiaEventQuery(never) == mtiaSuccess);
        char step = 1;
        IPC_CHECK(toExporter.send(step));
        IPC_CHECK(
            toImporter.receive(step));  // destroyed, and the records reused by completed records
        mtiaStream_t s = nullptr;
        IPC_CHECK(mtiaStreamCreate(&s) == mtiaSuccess);
        for (mtiaEvent_t x : {e, never}) {
            IPC_CHECK_ERROR(mtiaEventQuery(x), mtiaErrorInvalidHandle,
                            "destroyed by its exporting process");
            IPC_CHECK_ERROR(mtiaEventSynchronize(x), mtiaErrorInvalidHandle,
                            "destroyed by its exporting process");
            IPC_CHECK_ERROR(mtiaStreamWaitEvent(s, x, 0), mtiaErrorInvalidHandle,
                            "destroyed by its exporting process");
            IPC_CHECK(mtiaEventDestroy(x) == mtiaSuccess);
        }
        IPC_CHECK(mtiaStreamSynchronize(s) == mtiaSuccess);
        IPC_CHECK(mtiaStreamDestroy(s) == mtiaSuccess);
        IPC_CHECK(toExporter.send(step));
        return 0;
    };
    expectExporterAndImporterPass(exporter, importer);
}

// More than 64 records complete ahead of an earlier one still held: a wait for the earlier one
// keeps waiting (the tickets completed ahead are all remembered, none counts as completed early).
TEST(IpcEvent, ManyLaterRecordsDoNotReleaseAWaitForAnEarlierOne) {
    constexpr int kLater = 100;
    Channel toImporter, toExporter, toParent, release;
    const auto exporter = [&] {
        watchdog();
        mtiaEvent_t e = nullptr;
        IPC_CHECK(mtiaEventCreateWithFlags(&e, mtiaEventInterprocess | mtiaEventDisableTiming) ==
                  mtiaSuccess);
        mtiaStream_t held = nullptr, fast = nullptr;
        IPC_CHECK(mtiaStreamCreate(&held) == mtiaSuccess);
        IPC_CHECK(mtiaStreamCreate(&fast) == mtiaSuccess);
        mtiaIpcEventHandle_t h;
        IPC_CHECK(mtiaIpcGetEventHandle(&h, e) == mtiaSuccess);
        IPC_CHECK(mtiaLaunchHostFunc(held, blockUntilSaid, &release) == mtiaSuccess);
        IPC_CHECK(mtiaEventRecord(e, held) == mtiaSuccess);
        IPC_CHECK(toImporter.send(h));
        char step = 0;
        IPC_CHECK(toExporter.receive(step));  // the importer waits for the first record
        for (int i = 0; i < kLater; ++i) {
            IPC_CHECK(mtiaEventRecord(e, fast) == mtiaSuccess);
            IPC_CHECK(mtiaStreamSynchronize(fast) == mtiaSuccess);
        }
        IPC_CHECK(toImporter.send(step));
        IPC_CHECK(toExporter.receive(step));
        IPC_CHECK(mtiaStreamSynchronize(held) == mtiaSuccess);
        IPC_CHECK(mtiaEventRecord(e, fast) == mtiaSuccess);
        IPC_CHECK(mtiaStreamSynchronize(fast) == mtiaSuccess);
        IPC_CHECK(toImporter.send(step));
        IPC_CHECK(toExporter.receive(step));
        IPC_CHECK(mtiaEventDestroy(e) == mtiaSuccess);
        return 0;
    };
    const auto importer = [&] {
        watchdog();
        mtiaIpcEventHandle_t h;
        IPC_CHECK(toImporter.receive(h));
        mtiaEvent_t e = nullptr;
        IPC_CHECK(mtiaIpcOpenEventHandle(&e, h) == mtiaSuccess);
        mtiaStream_t s = nullptr;
        IPC_CHECK(mtiaStreamCreate(&s) == mtiaSuccess);
        IPC_CHECK(mtiaStreamWaitEvent(s, e, 0) == mtiaSuccess);
        char step = 1;
        IPC_CHECK(toExporter.send(step));
        IPC_CHECK(toImporter.receive(step));                 // the later records all completed
        IPC_CHECK(mtiaStreamQuery(s) == mtiaErrorNotReady);  // still waiting for the first record
        IPC_CHECK(toParent.send(step));                      // the parent lets the held stream go
        IPC_CHECK(mtiaStreamSynchronize(s) == mtiaSuccess);
        IPC_CHECK(toExporter.send(step));
        IPC_CHECK(toImporter.receive(
            step));  // one more record, after all the others: every record completed
        IPC_CHECK(mtiaEventSynchronize(e) == mtiaSuccess);
        IPC_CHECK(mtiaEventQuery(e) == mtiaSuccess);
        IPC_CHECK(toExporter.send(step));
        IPC_CHECK(mtiaEventDestroy(e) == mtiaSuccess);
        IPC_CHECK(mtiaStreamDestroy(s) == mtiaSuccess);
        return 0;
    };
    expectExporterAndImporterPass(exporter, importer,
                                  [&] { return releaseWhenSaid(toParent, release); });
}

}  // namespace
}  // namespace mtia::ipc::test
