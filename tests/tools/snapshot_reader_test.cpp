// mtia-mem's snapshot readers and trace generator: the 2.x JSON shape, the same snapshot as a pickle,
// clear errors for files that are not snapshots, and generated traces that are deterministic and
// balanced.
#include "snapshot_reader.hpp"
#include "trace_generator.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <unistd.h>

namespace {

using namespace mtia::mem;

std::string tempFile(const std::string& contents) {
  char path[] = "/tmp/mtia-mem-test-XXXXXX";
  const int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(write(fd, contents.data(), contents.size()), static_cast<ssize_t>(contents.size()));
  close(fd);
  return path;
}

std::string errorOf(const std::string& contents) {
  const std::string path = tempFile(contents);
  std::string what;
  try {
    readSnapshot(path);
  } catch (const SnapshotError& e) {
    what = e.what();
  }
  std::remove(path.c_str());
  return what;
}

TEST(SnapshotReader, ReadsTheJsonShape) {
  const std::string path = tempFile(R"({"segments": [], "device_traces": [[
      {"action": "alloc", "addr": 140000000000000, "size": 4096, "stream": 0, "time_us": 17, "frames": []},
      {"action": "free_requested", "addr": 140000000000000, "size": 4096, "stream": 0},
      {"action": "free_completed", "addr": 140000000000000, "size": 4096, "stream": 0},
      {"action": "segment_map", "addr": 5, "size": 2097152, "stream": 7},
      {"action": "oom", "device_free": 1024, "size": 9999, "stream": 0},
      {"action": "annotate", "addr": 0, "size": 0, "stream": 0}], []],
      "allocator_settings": {}, "external_annotations": []})");
  const Snapshot s = readSnapshot(path);
  std::remove(path.c_str());
  ASSERT_EQ(s.deviceTraces.size(), 2u);
  ASSERT_EQ(s.deviceTraces[0].size(), 6u);
  EXPECT_TRUE(s.deviceTraces[1].empty());
  EXPECT_EQ(s.deviceTraces[0][0].action, Action::Alloc);
  EXPECT_EQ(s.deviceTraces[0][0].addr, 140000000000000u);
  EXPECT_EQ(s.deviceTraces[0][0].size, 4096u);
  EXPECT_EQ(s.deviceTraces[0][0].timeUs, 17.0);
  EXPECT_EQ(s.deviceTraces[0][1].action, Action::FreeRequested);
  EXPECT_EQ(s.deviceTraces[0][2].action, Action::FreeCompleted);
  EXPECT_EQ(s.deviceTraces[0][3].stream, 7u);
  EXPECT_EQ(s.deviceTraces[0][4].action, Action::Oom);
  EXPECT_EQ(s.deviceTraces[0][4].addr, 1024u);  // device_free
  EXPECT_EQ(s.deviceTraces[0][5].action, Action::Other);
}

TEST(SnapshotReader, SaysWhatIsWrong) {
  EXPECT_NE(errorOf("not json at all").find("not a JSON snapshot"), std::string::npos);
  EXPECT_NE(errorOf(R"({"segments": []})").find("no 'device_traces'"), std::string::npos);
  EXPECT_NE(errorOf(R"({"device_traces": [5]})").find("device_traces[0] is not a list"), std::string::npos);
  EXPECT_NE(errorOf(R"({"device_traces": [[{"addr": 1}]]})").find("device_traces[0][0]: no 'action'"),
            std::string::npos);
  EXPECT_NE(errorOf(R"({"device_traces": [[{"action": "alloc", "addr": 1}]]})").find("no 'size'"), std::string::npos);
  EXPECT_NE(errorOf(R"({"device_traces": [[{"action": "alloc", "addr": "x", "size": 1}]]})")
                .find("'addr' is not a non-negative number"),
            std::string::npos);
  EXPECT_NE(errorOf(std::string("\x80\x04K\x01", 4)).find("malformed pickle"), std::string::npos);
  EXPECT_NE(errorOf(std::string("\x80\x04K\x01.", 5)).find("not a dict"), std::string::npos);
  EXPECT_NE(errorOf("").find("not a JSON snapshot"), std::string::npos);
  std::string missing;
  try {
    readSnapshot("/nonexistent/snapshot.pickle");
  } catch (const SnapshotError& e) {
    missing = e.what();
  }
  EXPECT_NE(missing.find("cannot open"), std::string::npos);
}

TEST(TraceGenerator, SameSeedSameTraceAndEveryBlockFreed) {
  for (const char* name : {"train", "train-varlen", "kv-cache"}) {
    GenerateOptions o;
    ASSERT_TRUE(workloadFromName(name, o.workload));
    o.steps = 2;
    o.seed = 42;
    const Snapshot a = generate(o);
    const Snapshot b = generate(o);
    ASSERT_EQ(a.deviceTraces.size(), 1u);
    ASSERT_EQ(a.deviceTraces[0].size(), b.deviceTraces[0].size()) << name;
    for (size_t i = 0; i < a.deviceTraces[0].size(); ++i) {
      ASSERT_EQ(a.deviceTraces[0][i].addr, b.deviceTraces[0][i].addr);
      ASSERT_EQ(a.deviceTraces[0][i].size, b.deviceTraces[0][i].size);
    }
    std::map<uint64_t, uint64_t> live;
    size_t allocs = 0, small = 0, large = 0;
    for (const TraceEntry& e : a.deviceTraces[0]) {
      if (e.action == Action::Alloc) {
        ASSERT_GT(e.size, 0u);
        ASSERT_TRUE(live.emplace(e.addr, e.size).second) << "address allocated twice while live";
        ++allocs;
        small += e.size < (1u << 20);
        large += e.size >= (10u << 20);
      } else if (e.action == Action::FreeRequested) {
        ASSERT_EQ(live.count(e.addr), 1u) << "free of a block that is not live";
        EXPECT_EQ(live[e.addr], e.size);
        live.erase(e.addr);
      }
    }
    EXPECT_TRUE(live.empty()) << name << ": " << live.size() << " blocks never freed";
    EXPECT_GT(allocs, 100u) << name;
    EXPECT_GT(small, 0u) << name;
    EXPECT_GT(large, 0u) << name;
  }
  GenerateOptions o;
  o.workload = Workload::TrainVarlen;
  o.steps = 3;
  o.seed = 1;
  const Snapshot a = generate(o);
  o.seed = 2;
  const Snapshot b = generate(o);
  bool differs = a.deviceTraces[0].size() != b.deviceTraces[0].size();
  for (size_t i = 0; !differs && i < a.deviceTraces[0].size(); ++i)
    differs = a.deviceTraces[0][i].size != b.deviceTraces[0][i].size;
  EXPECT_TRUE(differs) << "another seed gives the same trace";
  Workload w;
  EXPECT_FALSE(workloadFromName("inference", w));
}

TEST(TraceGenerator, JsonRoundTrips) {
  GenerateOptions o;
  o.workload = Workload::KvCache;
  o.steps = 50;
  const Snapshot a = generate(o);
  std::ostringstream text;
  writeJson(a, text);
  const std::string path = tempFile(text.str());
  const Snapshot b = readSnapshot(path);
  std::remove(path.c_str());
  ASSERT_EQ(b.deviceTraces.size(), 1u);
  ASSERT_EQ(b.deviceTraces[0].size(), a.deviceTraces[0].size());
  for (size_t i = 0; i < a.deviceTraces[0].size(); ++i) {
    EXPECT_EQ(b.deviceTraces[0][i].action, a.deviceTraces[0][i].action);
    EXPECT_EQ(b.deviceTraces[0][i].addr, a.deviceTraces[0][i].addr);
    EXPECT_EQ(b.deviceTraces[0][i].size, a.deviceTraces[0][i].size);
    EXPECT_EQ(b.deviceTraces[0][i].stream, a.deviceTraces[0][i].stream);
  }
}

}  // namespace
