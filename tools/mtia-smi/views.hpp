// Every view mtia-smi prints, as text or one line of JSON (schema_version 1).
// Views are pure functions of samples, so tests can drive them through the
// binary with a fixed machine and compare layouts.
#pragma once

#include "json_text.hpp"
#include "machine_sample.hpp"
#include "query_fields.hpp"

#include <mtia/mtia_ml.h>

#include <string>
#include <vector>

namespace mtia::smi {

inline constexpr int kSchemaVersion = 1;

struct CsvOptions {
    bool header = true;
    bool units = true;
};
// "--format=csv[,noheader][,nounits]"; throws SmiError(kExitBadArguments).
CsvOptions parseCsvFormat(const std::string& format);

// No arguments: the device table, then the process table.
std::string summaryText(const MachineSample& sample, const std::string& version);
std::string summaryJson(const MachineSample& sample, const std::string& version);
// -L
std::string listText(const MachineSample& sample);
std::string listJson(const MachineSample& sample);
// -q: every detail of every device and process.
std::string detailText(const MachineSample& sample, const std::string& version);
std::string detailJson(const MachineSample& sample, const std::string& version);
// --query-gpu / --query-compute-apps
std::string deviceQueryCsv(const MachineSample& sample,
                           const std::vector<const Field<DeviceSample>*>& fields,
                           const CsvOptions& options);
std::string deviceQueryJson(const MachineSample& sample,
                            const std::vector<const Field<DeviceSample>*>& fields);
std::string processQueryCsv(const MachineSample& sample,
                            const std::vector<const Field<ProcessSample>*>& fields,
                            const CsvOptions& options);
std::string processQueryJson(const MachineSample& sample,
                             const std::vector<const Field<ProcessSample>*>& fields);
// dmon: a '#' header (printed once) and one row per device per tick.
std::string dmonHeader();
std::string dmonRows(const MachineSample& sample);
std::string dmonJson(const MachineSample& sample);

// --all-machines: every machine of this user with a registry, by registry name. Selecting a machine
// leaves the library reading the last one.
struct MachineReading {
    std::string description;  // "devices=2 memory=... engines=4 machine=NAME"
    MachineSample sample;
};
std::vector<MachineReading> readAllMachines();  // throws SmiError
std::string allMachinesText(const std::vector<MachineReading>& machines, bool list,
                            const std::string& version);
std::string allMachinesJson(const std::vector<MachineReading>& machines, bool list,
                            const std::string& version);

// cleanup (cleanup_command.cpp): what was reaped and removed, one line per registry or one JSON
// document. prefix: with allMachines, only machines whose MTIA_SIM_MACHINE name starts with it.
// Throws SmiError.
std::string runCleanup(bool allMachines, const std::string& prefix, bool json);
// mem snapshot (snapshot_command.cpp): the confirmation line. Throws SmiError (2 bad arguments, 4
// another user's process, 6 no such process, 3 not supported, 255 no answer in time).
std::string runSnapshot(int64_t pid, const std::string& file, double timeoutSeconds);

// topo -m
struct TopologySample {
    std::vector<mtiamlTopology> devices;
};
TopologySample takeTopology(int32_t deviceCount);  // throws SmiError
std::string topoText(const TopologySample& topology);
std::string topoJson(const TopologySample& topology);

}  // namespace mtia::smi
