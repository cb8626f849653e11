// Graph objects and stream capture at the ABI (mtia_graph.h).
#include "core/api_guard.hpp"
#include "graph/capture.hpp"
#include "graph/graph_object.hpp"
#include "runtime/context/runtime.hpp"

#include <mtia/mtia.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <unordered_map>

using mtia::apiCall;
using mtia::enumBits;
using mtia::fail;
using mtia::requireNonNull;
using mtia::Runtime;
using mtia::graph::CaptureTable;
using mtia::graph::GraphObject;

namespace {

using GraphPtr = std::shared_ptr<GraphObject>;

GraphPtr graphOf(mtiaGraph_t handle, const char* argName = "graph") {
    if (handle == nullptr) fail(mtiaErrorInvalidHandle, "{} is NULL", argName);
    GraphPtr g = Runtime::instance().graphs().lookup(mtia::fromHandle(handle));
    if (!g)
        fail(mtiaErrorInvalidHandle, "{} {} is not a live graph (stale, destroyed or foreign)",
             argName, static_cast<void*>(handle));
    return g;
}

// By reference: a caller's out-of-range value must not be loaded as the enum before it is checked.
mtiaStreamCaptureMode captureMode(const mtiaStreamCaptureMode& mode) {
    const int m = enumBits(mode);
    if (m < mtiaStreamCaptureModeGlobal || m > mtiaStreamCaptureModeRelaxed)
        fail(mtiaErrorInvalidValue,
             "mode {} is not a mtiaStreamCaptureMode (Global 0, ThreadLocal 1, Relaxed 2)", m);
    return static_cast<mtiaStreamCaptureMode>(m);
}

mtiaGraph_t addGraph(GraphPtr g) {
    GraphObject* raw = g.get();
    mtia::graph::trackGraph(raw);
    try {
        return mtia::toHandle<mtiaGraph_t>(Runtime::instance().graphs().insert(std::move(g)));
    } catch (...) {
        mtia::graph::untrackGraph(raw);
        throw;
    }
}

// Captures begun with mtiaStreamBeginCapture, by capture id, until mtiaStreamEndCapture hands their
// graph out.
struct StreamCaptures {
    std::mutex mu;
    std::unordered_map<uint64_t, GraphPtr> graphs;
};
StreamCaptures& streamCaptures() {
    static StreamCaptures* s =
        new StreamCaptures();  // outlives every thread that may end a capture
    return *s;
}

}  // namespace

extern "C" {

MTIA_API mtiaError_t mtiaStreamIsCapturing(mtiaStream_t stream, mtiaStreamCaptureStatus* status) {
    return apiCall("mtiaStreamIsCapturing", [&] {
        requireNonNull(status, "status");
        *status =
            CaptureTable::instance().status(*Runtime::instance().borrowStream(stream), nullptr);
    });
}

MTIA_API mtiaError_t mtiaStreamGetCaptureInfo(mtiaStream_t stream, mtiaStreamCaptureStatus* status,
                                              uint64_t* id) {
    return apiCall("mtiaStreamGetCaptureInfo", [&] {
        requireNonNull(status, "status");
        uint64_t captureId = 0;
        *status =
            CaptureTable::instance().status(*Runtime::instance().borrowStream(stream), &captureId);
        if (id != nullptr) *id = captureId;
    });
}

MTIA_API mtiaError_t mtiaThreadExchangeStreamCaptureMode(mtiaStreamCaptureMode* mode) {
    return apiCall("mtiaThreadExchangeStreamCaptureMode", [&] {
        requireNonNull(mode, "mode");
        *mode = mtia::graph::exchangeThreadCaptureMode(captureMode(*mode));
    });
}

MTIA_API mtiaError_t mtiaStreamBeginCapture(mtiaStream_t stream, mtiaStreamCaptureMode mode) {
    return apiCall("mtiaStreamBeginCapture", [&] {
        const mtiaStreamCaptureMode m = captureMode(mode);
        Runtime& rt = Runtime::instance();
        std::shared_ptr<mtia::streams::Stream> s = rt.stream(stream);
        auto g = std::make_shared<GraphObject>(mtiaGraphKeepGraph);
        g->captureBegin(rt.graphContext(rt.device(s->device())), s, {}, m, /*fromStreamApi=*/true);
        StreamCaptures& sc = streamCaptures();
        std::lock_guard lock(sc.mu);
        sc.graphs.emplace(g->capture()->id(), g);
    });
}

MTIA_API mtiaError_t mtiaStreamEndCapture(mtiaStream_t stream, mtiaGraph_t* graph) {
    return apiCall("mtiaStreamEndCapture", [&] {
        requireNonNull(graph, "graph");
        Runtime& rt = Runtime::instance();
        std::shared_ptr<mtia::streams::Stream> s = rt.stream(stream);
        std::shared_ptr<mtia::graph::Capture> c = CaptureTable::instance().captureBegunOn(*s);
        GraphPtr g;
        {
            StreamCaptures& sc = streamCaptures();
            std::lock_guard lock(sc.mu);
            auto it = sc.graphs.find(c->id());
            if (it == sc.graphs.end())
                fail(mtiaErrorIllegalState, "capture {} on stream {} has ended already", c->id(),
                     s->id());
            g = std::move(it->second);
            sc.graphs.erase(it);
        }
        *graph = nullptr;
        g->captureEnd();  // on failure g goes with its pool
        *graph = addGraph(std::move(g));
    });
}

MTIA_API mtiaError_t mtiaEventRecordWithFlags(mtiaEvent_t event, mtiaStream_t stream,
                                              unsigned int flags) {
    return apiCall("mtiaEventRecordWithFlags", [&] {
        if ((flags & ~mtiaEventRecordExternal) != 0)
            fail(
                mtiaErrorInvalidValue,
                "flags 0x{:x} has unknown bits (mtiaEventRecordDefault or mtiaEventRecordExternal)",
                flags);
        Runtime& rt = Runtime::instance();
        std::shared_ptr<mtia::streams::Event> e = rt.streams().event(event);
        std::shared_ptr<mtia::streams::Stream> s = rt.stream(stream);
        if (s->capturing() &&
            CaptureTable::instance().recordEvent(e, *s, (flags & mtiaEventRecordExternal) != 0))
            return;
        e->record(*s);
    });
}

MTIA_API mtiaError_t mtiaGraphCreate(mtiaGraph_t* graph, unsigned int flags) {
    return apiCall("mtiaGraphCreate", [&] {
        requireNonNull(graph, "graph");
        if ((flags & ~mtiaGraphKeepGraph) != 0)
            fail(mtiaErrorInvalidValue, "flags 0x{:x} has unknown bits (0 or mtiaGraphKeepGraph)",
                 flags);
        *graph = addGraph(std::make_shared<GraphObject>(flags));
    });
}

MTIA_API mtiaError_t mtiaGraphCaptureBegin(mtiaGraph_t graph, mtiaStream_t stream,
                                           mtiaMemPoolId_t pool, mtiaStreamCaptureMode mode) {
    return apiCall("mtiaGraphCaptureBegin", [&] {
        GraphPtr g = graphOf(graph);
        const mtiaStreamCaptureMode m = captureMode(mode);
        Runtime& rt = Runtime::instance();
        std::shared_ptr<mtia::streams::Stream> s = rt.stream(stream);
        g->captureBegin(rt.graphContext(rt.device(s->device())), s,
                        mtia::allocator::PoolId{pool.first, pool.second}, m);
    });
}

MTIA_API mtiaError_t mtiaGraphCaptureEnd(mtiaGraph_t graph) {
    return apiCall("mtiaGraphCaptureEnd", [&] { graphOf(graph)->captureEnd(); });
}

MTIA_API mtiaError_t mtiaGraphInstantiate(mtiaGraph_t graph) {
    return apiCall("mtiaGraphInstantiate", [&] { graphOf(graph)->instantiate(); });
}

MTIA_API mtiaError_t mtiaGraphReplay(mtiaGraph_t graph, mtiaStream_t stream) {
    return apiCall("mtiaGraphReplay", [&] {
        GraphPtr g = graphOf(graph);
        Runtime& rt = Runtime::instance();
        if (stream == nullptr) {
            // PyTorch's replay: the current stream of the graph's device.
            const int dev = g->device();
            g->replay(*rt.streams().borrowCurrent(rt.device(dev)));
        } else {
            g->replay(*rt.borrowStream(stream));
        }
    });
}

MTIA_API mtiaError_t mtiaGraphReset(mtiaGraph_t graph) {
    return apiCall("mtiaGraphReset", [&] { graphOf(graph)->reset(); });
}

MTIA_API mtiaError_t mtiaGraphGetPool(mtiaGraph_t graph, mtiaMemPoolId_t* pool) {
    return apiCall("mtiaGraphGetPool", [&] {
        requireNonNull(pool, "pool");
        const mtia::allocator::PoolId id = graphOf(graph)->pool();
        *pool = mtiaMemPoolId_t{id.first, id.second};
    });
}

MTIA_API mtiaError_t mtiaGraphDestroy(mtiaGraph_t graph) {
    return apiCall("mtiaGraphDestroy", [&] {
        if (graph == nullptr) return;
        GraphPtr g = Runtime::instance().graphs().remove(mtia::fromHandle(graph));
        if (!g)
            fail(mtiaErrorInvalidHandle,
                 "graph {} is not a live graph (stale, destroyed or foreign)",
                 static_cast<void*>(graph));
        mtia::graph::untrackGraph(g.get());
        g->reset();
    });
}

MTIA_API mtiaError_t mtiaGraphDebugDump(mtiaGraph_t graph, const char* dotPath) {
    return apiCall("mtiaGraphDebugDump", [&] {
        GraphPtr g = graphOf(graph);
        requireNonNull(dotPath, "dotPath");
        g->debugDump(dotPath);
    });
}

MTIA_API mtiaError_t mtiaGraphGetInfo(mtiaGraph_t graph, mtiaGraphInfo* info) {
    return apiCall("mtiaGraphGetInfo", [&] {
        requireNonNull(info, "info");
        if (info->structSize == 0)
            fail(mtiaErrorInvalidValue,
                 "info->structSize is 0; initialise it with MTIA_GRAPH_INFO_INIT");
        GraphPtr g = graphOf(graph);
        mtiaGraphInfo full{};
        full.structSize = sizeof(full);
        g->info(full);
        const uint32_t n = std::min<uint32_t>(info->structSize, sizeof(full));
        full.structSize = n;
        std::memcpy(info, &full, n);
    });
}

}  // extern "C"
