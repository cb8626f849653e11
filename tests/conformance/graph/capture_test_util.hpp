// Pieces of the capture conformance tests (capture_legality_test.cpp, capture_streams_test.cpp)
// that the shared test helpers (tests/common) lack: capture status queries, owners of graphs and
// live captures, a host log whose host functions survive replays, the thread's capture mode for a
// scope, and a reader of the DOT dump. Their EXPECT_FAILS(want, call, arg) requires the last-error
// message to name the called function and the argument, as the stream tests' does. Uses only the
// public header.
#pragma once

#include <gtest/gtest.h>
#include <mtia/mtia.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/async_call.hpp"
#include "common/eventually.hpp"
#include "common/host_launch.hpp"
#include "common/kernels.hpp"
#include "common/latch.hpp"
#include "common/measure.hpp"
#include "common/memory.hpp"
#include "common/scopes.hpp"
#include "common/status.hpp"

// EXPECT_FAILS(mtiaErrorInvalidValue, mtiaGraphLaunch(nullptr, s), "graph")
#define EXPECT_FAILS(want, call, arg) EXPECT_FAILS_NAMING(want, call, arg)

namespace mtia_test {

// ---- Owners -------------------------------------------------------------------------------------

// Whether every owner (Stream, Event, DeviceFloats, Graph: anything with status()) was created;
// names is the list of their names, as ASSERT_CREATED writes it, for the message.
template <typename... Owners>
::testing::AssertionResult created(const char* names, const Owners&... owners) {
    ::testing::AssertionResult result = ::testing::AssertionSuccess();
    int index = 0;
    auto check = [&](mtiaError_t rc) {
        ++index;
        if (result && rc != mtiaSuccess)
            result = ::testing::AssertionFailure()
                     << "owner " << index << " of (" << names
                     << ") was not created: " << mtiaGetErrorName(rc) << " (" << rc
                     << ")\n  last error message: " << mtiaGetLastErrorMessage();
    };
    (check(owners.status()), ...);
    return result;
}

// ASSERT_CREATED(x, y, s): ASSERT_OK(x.status()), ASSERT_OK(y.status()), ASSERT_OK(s.status()).
#define ASSERT_CREATED(...) ASSERT_TRUE(::mtia_test::created(#__VA_ARGS__, __VA_ARGS__))

// ---- Capture status -----------------------------------------------------------------------------

// The capture status of s; an impossible value (and a test failure) when the query fails.
inline mtiaStreamCaptureStatus captureStatus(mtiaStream_t s) {
    mtiaStreamCaptureStatus st = static_cast<mtiaStreamCaptureStatus>(-1);
    const mtiaError_t rc = mtiaStreamIsCapturing(s, &st);
    if (rc != mtiaSuccess) {
        ADD_FAILURE() << "mtiaStreamIsCapturing returned " << mtiaGetErrorName(rc) << ": "
                      << mtiaGetLastErrorMessage();
        return static_cast<mtiaStreamCaptureStatus>(-1);
    }
    return st;
}

// The id of s's capture (0 when none; UINT64_MAX and a test failure when the query fails).
inline uint64_t captureId(mtiaStream_t s) {
    mtiaStreamCaptureStatus st = mtiaStreamCaptureStatusNone;
    uint64_t id = UINT64_MAX;
    const mtiaError_t rc = mtiaStreamGetCaptureInfo(s, &st, &id);
    if (rc != mtiaSuccess) {
        ADD_FAILURE() << "mtiaStreamGetCaptureInfo returned " << mtiaGetErrorName(rc) << ": "
                      << mtiaGetLastErrorMessage();
        return UINT64_MAX;
    }
    return id;
}

// A graph handle, destroyed with the owner. out() hands its address to mtiaStreamEndCapture.
class Graph {
public:
    Graph() = default;
    explicit Graph(unsigned flags) { status_ = mtiaGraphCreate(&g_, flags); }
    ~Graph() { reset(); }
    Graph(const Graph&) = delete;
    Graph& operator=(const Graph&) = delete;

    mtiaError_t status() const { return status_; }
    mtiaGraph_t get() const { return g_; }
    operator mtiaGraph_t() const { return g_; }
    // For mtiaStreamEndCapture: the previous graph is destroyed first.
    mtiaGraph_t* out() {
        reset();
        return &g_;
    }
    void reset() {
        if (g_ != nullptr) mtiaGraphDestroy(g_);
        g_ = nullptr;
    }

private:
    mtiaGraph_t g_ = nullptr;
    mtiaError_t status_ = mtiaSuccess;
};

// Ends, at scope exit, a capture still live on any of the streams (so that a failed assertion does
// not leave a stream capturing, which would make its owner's destructor fail).
class EndCaptureAtExit {
public:
    explicit EndCaptureAtExit(std::vector<mtiaStream_t> streams) : streams_(std::move(streams)) {}
    ~EndCaptureAtExit() {
        for (mtiaStream_t s : streams_) {
            mtiaStreamCaptureStatus st = mtiaStreamCaptureStatusNone;
            if (mtiaStreamIsCapturing(s, &st) != mtiaSuccess || st == mtiaStreamCaptureStatusNone)
                continue;
            mtiaGraph_t g = nullptr;
            mtiaStreamEndCapture(s, &g);
            if (g != nullptr) mtiaGraphDestroy(g);
        }
    }
    EndCaptureAtExit(const EndCaptureAtExit&) = delete;
    EndCaptureAtExit& operator=(const EndCaptureAtExit&) = delete;

private:
    std::vector<mtiaStream_t> streams_;
};

// The calling thread's capture interaction mode set to mode for the scope.
class ModeScope {
public:
    explicit ModeScope(mtiaStreamCaptureMode mode) : previous_(mode) {
        ok_ = mtiaThreadExchangeStreamCaptureMode(&previous_) == mtiaSuccess;
    }
    ~ModeScope() {
        if (ok_) mtiaThreadExchangeStreamCaptureMode(&previous_);
    }
    ModeScope(const ModeScope&) = delete;
    ModeScope& operator=(const ModeScope&) = delete;
    bool ok() const { return ok_; }

private:
    mtiaStreamCaptureMode previous_;
    bool ok_ = false;
};

inline const char* modeName(mtiaStreamCaptureMode m) {
    switch (m) {
    case mtiaStreamCaptureModeGlobal: return "Global";
    case mtiaStreamCaptureModeThreadLocal: return "ThreadLocal";
    case mtiaStreamCaptureModeRelaxed: return "Relaxed";
    }
    return "?";
}

inline constexpr mtiaStreamCaptureMode kAllModes[] = {
    mtiaStreamCaptureModeGlobal, mtiaStreamCaptureModeThreadLocal, mtiaStreamCaptureModeRelaxed};

// A sentinel for graph out-parameters that must be set to NULL (never dereferenced).
inline mtiaGraph_t notAGraph() {
    return reinterpret_cast<mtiaGraph_t>(static_cast<uintptr_t>(0x1));
}

// mtiaGraphGetInfo; a zeroed struct (and a test failure) when the call fails.
inline mtiaGraphInfo graphInfo(mtiaGraph_t g) {
    mtiaGraphInfo info = MTIA_GRAPH_INFO_INIT;
    const mtiaError_t rc = mtiaGraphGetInfo(g, &info);
    if (rc != mtiaSuccess) {
        ADD_FAILURE() << "mtiaGraphGetInfo returned " << mtiaGetErrorName(rc) << ": "
                      << mtiaGetLastErrorMessage();
        mtiaGraphInfo zero = MTIA_GRAPH_INFO_INIT;
        return zero;
    }
    return info;
}

// Captures on s (mtiaStreamBeginCapture, Global mode) what work enqueues there, and ends the
// capture into g; a failure of any step fails, and a capture still live then is ended.
inline ::testing::AssertionResult captureInto(Graph& g, mtiaStream_t s,
                                              const std::function<mtiaError_t()>& work) {
    mtiaError_t rc = mtiaStreamBeginCapture(s, mtiaStreamCaptureModeGlobal);
    if (rc != mtiaSuccess)
        return ::testing::AssertionFailure()
               << "mtiaStreamBeginCapture returned " << mtiaGetErrorName(rc) << ": "
               << mtiaGetLastErrorMessage();
    EndCaptureAtExit guard({s});
    rc = work();
    if (rc != mtiaSuccess)
        return ::testing::AssertionFailure()
               << "the captured work returned " << mtiaGetErrorName(rc) << ": "
               << mtiaGetLastErrorMessage();
    rc = mtiaStreamEndCapture(s, g.out());
    if (rc != mtiaSuccess)
        return ::testing::AssertionFailure()
               << "mtiaStreamEndCapture returned " << mtiaGetErrorName(rc) << ": "
               << mtiaGetLastErrorMessage();
    return ::testing::AssertionSuccess();
}

// ---- Work --------------------------------------------------------------------------------------

inline mtiaError_t launchBinary(const char* name, mtiaStream_t s, float* out, const float* a,
                                const float* b, uint64_t n) {
    const mtiaFunction_t fn = builtin(name);
    void* args[] = {&out, &a, &b, &n};
    return mtiaLaunchKernel(fn, kOne, kOne, args, 0, s);
}
inline mtiaError_t launchAdd(mtiaStream_t s, float* out, const float* a, const float* b,
                             uint64_t n) {
    return launchBinary("add_f32", s, out, a, b, n);
}
inline mtiaError_t launchMul(mtiaStream_t s, float* out, const float* a, const float* b,
                             uint64_t n) {
    return launchBinary("mul_f32", s, out, a, b, n);
}

// Values appended by host functions, in the order they ran. The host functions it queues keep their
// arguments in the log, so a host-function node may run on every replay: the log must outlive every
// stream and graph that may still run them (declare it first).
class HostLog {
public:
    HostLog() = default;
    HostLog(const HostLog&) = delete;
    HostLog& operator=(const HostLog&) = delete;

    // Queues on s (or records, while s captures) a host function that appends value.
    mtiaError_t append(mtiaStream_t s, int value) {
        Entry* e = nullptr;
        {
            std::lock_guard lock(mu_);
            entries_.push_back(Entry{this, value});
            e = &entries_.back();
        }
        return mtiaLaunchHostFunc(
            s,
            [](void* user) {
                auto* entry = static_cast<Entry*>(user);
                std::lock_guard lock(entry->log->mu_);
                entry->log->values_.push_back(entry->value);
            },
            e);
    }
    std::vector<int> values() const {
        std::lock_guard lock(mu_);
        return values_;
    }
    size_t size() const {
        std::lock_guard lock(mu_);
        return values_.size();
    }
    void clear() {
        std::lock_guard lock(mu_);
        values_.clear();
    }

private:
    struct Entry {
        HostLog* log;
        int value;
    };
    mutable std::mutex mu_;
    std::deque<Entry> entries_;  // stable addresses
    std::vector<int> values_;
};

// Fills d with value eagerly on s and waits for it.
inline ::testing::AssertionResult fillNow(mtiaStream_t s, float* d, float value, uint64_t n) {
    mtiaError_t rc = launchFill(s, d, value, n);
    if (rc == mtiaSuccess) rc = mtiaStreamSynchronize(s);
    if (rc == mtiaSuccess) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << "eager fill failed: " << mtiaGetErrorName(rc) << ": " << mtiaGetLastErrorMessage();
}

// ---- DOT dump -----------------------------------------------------------------------------------

// A graph as mtiaGraphDebugDump writes it: nodes "n<index> [label=...]", edges "n<a> -> n<b>".
struct DotGraph {
    std::string text;
    std::map<int, std::string> labels;
    std::set<std::pair<int, int>> edges;

    // The one node whose label contains needle: its index, -1 when none, -2 when several.
    int find(const std::string& needle) const {
        int found = -1;
        for (const auto& [idx, label] : labels) {
            if (label.find(needle) == std::string::npos) continue;
            if (found != -1) return -2;
            found = idx;
        }
        return found;
    }
    // Every node whose label contains needle.
    std::vector<int> findAll(const std::string& needle) const {
        std::vector<int> found;
        for (const auto& [idx, label] : labels)
            if (label.find(needle) != std::string::npos) found.push_back(idx);
        return found;
    }
    bool hasEdge(int a, int b) const { return edges.count({a, b}) != 0; }
    int outDegree(int n) const {
        int d = 0;
        for (const auto& e : edges) d += e.first == n;
        return d;
    }
    int inDegree(int n) const {
        int d = 0;
        for (const auto& e : edges) d += e.second == n;
        return d;
    }
};

inline ::testing::AssertionResult parseDot(const std::string& text, DotGraph* out);

// Dumps g to a temporary file and reads it back. Edges: every "n<a> -> n<b>" pair (chains too);
// nodes: every statement starting "n<index> [" with a label="..." attribute.
inline ::testing::AssertionResult dumpDot(mtiaGraph_t g, DotGraph* out) {
    static std::atomic<int> counter{0};
    const std::string path = "/tmp/mtia_capture_test_" + std::to_string(getpid()) + "_" +
                             std::to_string(counter.fetch_add(1)) + ".dot";
    const mtiaError_t rc = mtiaGraphDebugDump(g, path.c_str());
    if (rc != mtiaSuccess)
        return ::testing::AssertionFailure()
               << "mtiaGraphDebugDump returned " << mtiaGetErrorName(rc) << ": "
               << mtiaGetLastErrorMessage();
    std::ifstream in(path);
    std::stringstream buf;
    buf << in.rdbuf();
    std::remove(path.c_str());
    return parseDot(buf.str(), out);
}

inline ::testing::AssertionResult parseDot(const std::string& text, DotGraph* out) {
    out->text = text;
    out->labels.clear();
    out->edges.clear();
    if (out->text.find("digraph") == std::string::npos)
        return ::testing::AssertionFailure() << "the dump is not a digraph:\n" << out->text;

    // Edges are read with quoted strings blanked out (a label may hold "->").
    std::string bare = out->text;
    bool quoted = false;
    for (size_t i = 0; i < bare.size(); ++i) {
        const char c = bare[i];
        if (quoted && c == '\\') {
            bare[i] = ' ';
            if (i + 1 < bare.size()) bare[++i] = ' ';
        } else if (c == '"') {
            quoted = !quoted;
        } else if (quoted) {
            bare[i] = ' ';
        }
    }
    static const std::regex edge(R"(\bn(\d+)\s*->\s*(?=n(\d+)\b))");
    for (std::sregex_iterator it(bare.begin(), bare.end(), edge), end; it != end; ++it)
        out->edges.insert({std::stoi((*it)[1].str()), std::stoi((*it)[2].str())});

    static const std::regex node(R"((?:^|[;{\n])\s*n(\d+)\s*\[)");
    static const std::regex label(R"(label\s*=\s*\"((?:[^\"\\]|\\.)*)\")");
    for (std::sregex_iterator it(bare.begin(), bare.end(), node), end; it != end;
         ++it) {  // same offsets as text
        const size_t attrs = static_cast<size_t>(it->position(0) + it->length(0));
        // The attribute list ends at the first ']' outside quotes.
        size_t close = attrs;
        bool quoted = false;
        for (; close < out->text.size(); ++close) {
            const char c = out->text[close];
            if (c == '\\' && quoted) {
                ++close;
            } else if (c == '"') {
                quoted = !quoted;
            } else if (c == ']' && !quoted) {
                break;
            }
        }
        const std::string list = out->text.substr(attrs, close - attrs);
        std::smatch m;
        out->labels[std::stoi((*it)[1].str())] =
            std::regex_search(list, m, label) ? m[1].str() : list;
    }
    return ::testing::AssertionSuccess();
}

inline std::string describeEdges(const DotGraph& dot) {
    std::string s;
    for (const auto& [a, b] : dot.edges) s += " n" + std::to_string(a) + "->n" + std::to_string(b);
    return s.empty() ? " (none)" : s;
}

}  // namespace mtia_test
