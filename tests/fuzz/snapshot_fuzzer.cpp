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

// A snapshot written by us must read back, with as many segments, blocks and entries.
void checkReadsBack(const Snapshot& snap, const Snapshot& again, const char* how) {
  if (again.segments.size() != snap.segments.size() || again.deviceTraces.size() != snap.deviceTraces.size())
    broken(how, "the written snapshot reads back with another shape");
  for (size_t d = 0; d < snap.deviceTraces.size(); ++d)
    if (again.deviceTraces[d].size() != snap.deviceTraces[d].size()) broken(how, "trace lengths differ");
  if (again.externalAnnotations != snap.externalAnnotations) broken(how, "external_annotations differ");
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
    checkReadsBack(snap, readPickleSnapshot("pickled", toPickle(snap)), "pickle");
    std::ostringstream json;
    writeJson(snap, json);
    checkReadsBack(snap, readJsonSnapshot("json", json.str()), "JSON");
  } catch (const SnapshotError& e) {
    broken("what we wrote does not read back", e.what());
  }
  return 0;
}
