// libFuzzer target for mtia-mem's snapshot readers, built twice by
// run_fuzzers.sh: with MTIA_FUZZ_PICKLE the input goes to the pickle reader,
// else to the JSON reader. Every input must end in a Snapshot or a
// SnapshotError, never a crash, a sanitizer report or a runaway allocation;
// and what was read must go through every report (summary, diff, trace, plot)
// and back through the writers and the other reader unchanged in shape.
#include "allocator/snapshot/writer.hpp"
#include "html_plot.hpp"
#include "snapshot_diff.hpp"
#include "snapshot_reader.hpp"
#include "snapshot_summary.hpp"
#include "trace_analysis.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

namespace {

using namespace mtia::mem;

[[noreturn]] void broken(const char* what, const std::string& detail) {
    std::fprintf(stderr, "snapshot fuzzer: %s: %s\n", what, detail.c_str());
    std::abort();
}

// Free-form values as a format keeps them: NaN is itself; JSON has no tuples (they come back as
// lists) and no NaN or infinity (written as null).
bool sameValue(const Value& a, const Value& b, bool json) {
    if (a.kind == Value::Kind::Float && b.kind == Value::Kind::Float)
        return a.real == b.real || (std::isnan(a.real) && std::isnan(b.real));
    if (json && a.kind == Value::Kind::Float && !std::isfinite(a.real))
        return b.kind == Value::Kind::None;
    const auto isList = [](const Value& v) {
        return v.kind == Value::Kind::List || v.kind == Value::Kind::Tuple;
    };
    if (a.kind != b.kind && !(json && isList(a) && isList(b))) return false;
    if (a.items.size() != b.items.size() || a.fields.size() != b.fields.size()) return false;
    for (size_t i = 0; i < a.items.size(); ++i)
        if (!sameValue(a.items[i], b.items[i], json)) return false;
    for (size_t i = 0; i < a.fields.size(); ++i)
        if (a.fields[i].first != b.fields[i].first ||
            !sameValue(a.fields[i].second, b.fields[i].second, json))
            return false;
    return a.boolean == b.boolean && a.integer == b.integer && a.text == b.text;
}

// A snapshot written by us must read back, with as many segments, blocks and entries and the same
// free-form parts.
void checkReadsBack(const Snapshot& snap, const Snapshot& again, const char* how, bool json) {
    if (again.segments.size() != snap.segments.size() ||
        again.deviceTraces.size() != snap.deviceTraces.size())
        broken(how, "the written snapshot reads back with another shape");
    for (size_t d = 0; d < snap.deviceTraces.size(); ++d)
        if (again.deviceTraces[d].size() != snap.deviceTraces[d].size())
            broken(how, "trace lengths differ");
    if (again.externalAnnotations.size() != snap.externalAnnotations.size())
        broken(how, "external_annotations differ");
    for (size_t i = 0; i < snap.externalAnnotations.size(); ++i)
        if (!sameValue(snap.externalAnnotations[i], again.externalAnnotations[i], json))
            broken(how, "an external annotation differs");
    // allocator_settings: None and {} both come back as {}.
    if (snap.allocatorSettings.kind == Value::Kind::Dict &&
        !sameValue(snap.allocatorSettings, again.allocatorSettings, json))
        broken(how, "allocator_settings differ");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string bytes(reinterpret_cast<const char*>(data), size);
    Snapshot snap;
    try {
#ifdef MTIA_FUZZ_PICKLE
        snap = readPickleSnapshot("fuzz", std::move(bytes));
#else
        snap = readJsonSnapshot("fuzz", std::move(bytes));
#endif
    } catch (const SnapshotError&) {
        return 0;  // refused with a message: what the reader must do with bad input
    }
    summarize(snap);
    analyzeTraces(snap);
    diffSnapshots(snap, snap);
    renderPlot(snap, "fuzz");
    try {
        checkReadsBack(snap, readPickleSnapshot("pickled", toPickle(snap)), "pickle", false);
        std::ostringstream json;
        writeJson(snap, json);
        checkReadsBack(snap, readJsonSnapshot("json", json.str()), "JSON", true);
    } catch (const SnapshotError& e) {
        broken("what we wrote does not read back", e.what());
    }
    return 0;
}
