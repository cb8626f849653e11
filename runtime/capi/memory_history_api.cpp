// Memory history and snapshots at the ABI (<mtia/mtia_memory_history.h>).
#include "core/api_guard.hpp"
#include "core/error.hpp"
#include "runtime/context/memory_snapshot.hpp"
#include "runtime/context/runtime.hpp"

#include <mtia/mtia.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

using mtia::apiCall;
using mtia::enumBits;
using mtia::fail;
using mtia::requireNonNull;
using mtia::Runtime;
namespace alloc = mtia::allocator;

namespace {

// The format after checking it (C callers may pass any int for the enum).
mtiaSnapshotFormat checkSnapshotArgs(const mtiaSnapshotFormat& fmt, unsigned int flags) {
    const int f = enumBits(fmt);
    if (f != mtiaSnapshotJson && f != mtiaSnapshotPickle)
        fail(mtiaErrorInvalidValue,
             "fmt {} is neither mtiaSnapshotJson (0) nor mtiaSnapshotPickle (1)", f);
    if ((flags & ~mtiaSnapshotIncludeTraces) != 0)
        fail(mtiaErrorInvalidValue, "flags {:#x} has bits other than mtiaSnapshotIncludeTraces (1)",
             flags);
    return static_cast<mtiaSnapshotFormat>(f);
}

}  // namespace

extern "C" {

MTIA_API mtiaError_t mtiaMemoryRecordHistory(mtiaHistoryMode mode, mtiaStackMode stacks,
                                             size_t maxEntries) {
    return apiCall("mtiaMemoryRecordHistory", [&] {
        const int m = enumBits(mode);
        const int k = enumBits(stacks);
        if (m < mtiaHistoryOff || m > mtiaHistoryAll)
            fail(mtiaErrorInvalidValue,
                 "mode {} is not mtiaHistoryOff (0), mtiaHistoryState (1) or mtiaHistoryAll (2)",
                 m);
        if (k < mtiaStacksNone || k > mtiaStacksAll)
            fail(mtiaErrorInvalidValue,
                 "stacks {} is not mtiaStacksNone (0), mtiaStacksCpp (1), mtiaStacksFramework (2) "
                 "or mtiaStacksAll (3)",
                 k);
        Runtime& rt = Runtime::instance();
        // Concurrent calls apply one after the other, so every device ends with the last settings.
        static std::mutex applying;
        std::lock_guard lock(applying);
        rt.allocatorContext().history().configure(static_cast<alloc::HistoryMode>(m),
                                                  static_cast<mtiaStackMode>(k), maxEntries);
        for (int i = 0; i < rt.deviceCount(); ++i)
            if (alloc::DeviceAllocator* mem = rt.device(i).memoryIfStarted())
                mem->applyHistorySettings();
    });
}

MTIA_API mtiaError_t mtiaMemorySetContextProvider(const mtiaContextProvider* provider) {
    return apiCall("mtiaMemorySetContextProvider",
                   [&] { Runtime::instance().allocatorContext().history().setProvider(provider); });
}

MTIA_API mtiaError_t mtiaMemoryAnnotate(const char* key, const char* value) {
    return apiCall("mtiaMemoryAnnotate", [&] {
        requireNonNull(key, "key");
        if (key[0] == '\0') fail(mtiaErrorInvalidValue, "key is empty");
        Runtime& rt = Runtime::instance();
        rt.allocatorContext().history().annotate(key, value, mtia::currentDeviceOrdinal());
    });
}

MTIA_API mtiaError_t mtiaMemorySnapshot(mtiaSnapshotFormat fmt, unsigned int flags,
                                        mtiaBuffer* out) {
    return apiCall("mtiaMemorySnapshot", [&] {
        requireNonNull(out, "out");
        const mtiaSnapshotFormat format = checkSnapshotArgs(fmt, flags);
        *out = mtia::memorySnapshot(Runtime::instance(), format,
                                    (flags & mtiaSnapshotIncludeTraces) != 0);
    });
}

MTIA_API mtiaError_t mtiaBufferFree(mtiaBuffer* buf) {
    if (buf == nullptr) return mtiaSuccess;
    std::free(buf->data);
    buf->data = nullptr;
    buf->size = 0;
    return mtiaSuccess;
}

MTIA_API mtiaError_t mtiaMemoryDumpSnapshot(const char* path, mtiaSnapshotFormat fmt,
                                            unsigned int flags) {
    return apiCall("mtiaMemoryDumpSnapshot", [&] {
        requireNonNull(path, "path");
        if (path[0] == '\0') fail(mtiaErrorInvalidValue, "path is empty");
        const mtiaSnapshotFormat format = checkSnapshotArgs(fmt, flags);
        mtia::dumpMemorySnapshot(Runtime::instance(), path, format,
                                 (flags & mtiaSnapshotIncludeTraces) != 0);
    });
}

}  // extern "C"
