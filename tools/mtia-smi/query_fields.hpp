// The fields of --query-gpu and --query-compute-apps. Names are a contract:
// fields are only ever added, never renamed (reference/smi-topology-ipc.md 1.3).
#pragma once

#include "machine_sample.hpp"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace mtia::smi {

template <typename Row>
struct Field {
    const char* name;
    const char* unit;  // "" when the value has none; "MiB", "%"
    bool numeric;      // a JSON number rather than a string
    const char* help;
    // The value without its unit; empty when unavailable ([N/A] in CSV, null in JSON).
    std::function<std::optional<std::string>(const MachineSample&, const Row&)> value;
};

const std::vector<Field<DeviceSample>>& deviceFields();
const std::vector<Field<ProcessSample>>& processFields();

// Splits "a,b , c" and looks every name up; throws SmiError(kExitBadArguments) naming an unknown
// field.
template <typename Row>
std::vector<const Field<Row>*> selectFields(const std::vector<Field<Row>>& table,
                                            const std::string& list, const char* option);

// The --help-query-* text.
template <typename Row>
std::string fieldHelp(const std::vector<Field<Row>>& table, const char* title);

}  // namespace mtia::smi
