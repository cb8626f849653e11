// hwloc loads that hostile input cannot take the process down. hwloc reads
// HWLOC_XMLFILE, HWLOC_SYNTHETIC, HWLOC_FSROOT and HWLOC_CPUID_PATH by itself
// during hwloc_topology_load, and trusts them: a deeply nested XML file
// overflows the stack in its recursive parser, /dev/zero as the XML file makes
// it read without end, a synthetic description can ask for billions of
// objects. Topology is never needed to run work, so loadBoundedTopology checks
// those inputs first and, when one is unsafe, loads nothing: the caller treats
// the topology as unknown and says why.
//
// Used by the management library (platform/topology/host_topology.cpp) and by
// the sim driver (drivers/sim/topology.cpp: NUMA node of each device, engine
// CPU binding), which may include this header and nothing else of
// platform/topology (tools/check_layering.py). No dependency but hwloc.
#pragma once

#include <hwloc.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace mtia::topology {

// Limits on what hwloc is given. A real host's XML is well under a megabyte and about 15 levels
// deep (machine, package, caches, core, PU, and a PCI tree of a few bridges); a synthetic
// description of a large test machine has a few thousand PUs.
inline constexpr size_t kMaxXmlBytes = size_t{16} << 20;
inline constexpr int kMaxXmlDepth = 128;
inline constexpr uint64_t kMaxSyntheticObjects = uint64_t{1} << 16;
inline constexpr size_t kMaxSyntheticLength = 4096;

// What a load is for: the I/O objects (PCI tree) cost start-up time and only the link matrix reads
// them.
enum class IoObjects { Skip, Keep };

// Creates and loads a topology of this host, or of what HWLOC_XMLFILE / HWLOC_SYNTHETIC describe
// once they pass the checks above. The XML file is read here (a regular file, at most kMaxXmlBytes,
// nesting at most kMaxXmlDepth) and handed to hwloc as a buffer, so hwloc parses exactly what was
// checked. HWLOC_FSROOT and HWLOC_CPUID_PATH must name directories. The x86 backend is left out
// unless HWLOC_COMPONENTS chooses components (it binds the thread to every CPU in turn for cache
// details no caller reads). Returns nullptr and sets why (naming the variable) when an input is
// refused or hwloc fails, and *refused (when given) to whether an input was refused, which the
// caller may want to warn about; the caller owns the result (hwloc_topology_destroy). Thread-safe
// (touches no shared state but reads the environment); blocks for the load (milliseconds, sysfs or
// the file).
hwloc_topology_t loadBoundedTopology(IoObjects io, std::string& why, bool* refused = nullptr);

// The checks, exposed for tests. Each returns true when text is acceptable, else false with why
// set. checkXmlNesting counts element nesting (comments, processing instructions, CDATA and quoted
// attribute values skipped) and refuses beyond maxDepth.
bool checkXmlNesting(std::string_view xml, int maxDepth, std::string& why);
// checkSynthetic multiplies the arities of a synthetic description ("pack:2 core:4 pu:2",
// attributes in parentheses and memory children in brackets ignored) and refuses more than
// kMaxSyntheticObjects leaves, or a description longer than kMaxSyntheticLength.
bool checkSynthetic(std::string_view description, std::string& why);

}  // namespace mtia::topology
