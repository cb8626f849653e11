// --query-gpu and --query-compute-apps, as CSV or one JSON line.
#include "smi_error.hpp"
#include "views.hpp"

#include <sstream>

namespace mtia::smi {
namespace {

constexpr const char* kNotAvailable = "[N/A]";

template <typename Row>
std::string csv(const MachineSample& sample, const std::vector<Row>& rows,
                const std::vector<const Field<Row>*>& fields, const CsvOptions& options) {
    std::string out;
    if (options.header) {
        for (size_t i = 0; i < fields.size(); ++i) {
            if (i > 0) out += ", ";
            out += fields[i]->name;
            if (*fields[i]->unit != '\0') out += std::string(" [") + fields[i]->unit + "]";
        }
        out += "\n";
    }
    for (const Row& row : rows) {
        for (size_t i = 0; i < fields.size(); ++i) {
            if (i > 0) out += ", ";
            const std::optional<std::string> value = fields[i]->value(sample, row);
            if (!value) {
                out += kNotAvailable;
                continue;
            }
            out += *value;
            if (options.units && *fields[i]->unit != '\0') {
                out += std::string(" ") + fields[i]->unit;
            }
        }
        out += "\n";
    }
    return out;
}

template <typename Row>
std::string json(const MachineSample& sample, const std::vector<Row>& rows,
                 const std::vector<const Field<Row>*>& fields, const char* arrayName) {
    JsonBuilder json;
    json.beginObject()
        .number("schema_version", kSchemaVersion)
        .number("timestamp_ms", sample.timeMs);
    json.beginArray(arrayName);
    for (const Row& row : rows) {
        json.beginObject();
        for (const Field<Row>* field : fields) {
            const std::optional<std::string> value = field->value(sample, row);
            if (!value) {
                json.null(field->name);
            } else if (field->numeric) {
                json.raw(field->name, *value);
            } else {
                json.string(field->name, *value);
            }
        }
        json.endObject();
    }
    json.endArray().endObject();
    return json.text() + "\n";
}

}  // namespace

CsvOptions parseCsvFormat(const std::string& format) {
    CsvOptions options;
    std::stringstream in(format);
    std::string item;
    bool csvSeen = false;
    while (std::getline(in, item, ',')) {
        if (item == "csv") {
            csvSeen = true;
        } else if (item == "noheader") {
            options.header = false;
        } else if (item == "nounits") {
            options.units = false;
        } else {
            throw SmiError(kExitBadArguments,
                           "--format: '" + item +
                               "' is not valid: expected csv[,noheader][,nounits]");
        }
    }
    if (!csvSeen)
        throw SmiError(kExitBadArguments,
                       "--format: expected csv[,noheader][,nounits], got '" + format + "'");
    return options;
}

std::string deviceQueryCsv(const MachineSample& sample,
                           const std::vector<const Field<DeviceSample>*>& fields,
                           const CsvOptions& options) {
    return csv(sample, sample.devices, fields, options);
}

std::string deviceQueryJson(const MachineSample& sample,
                            const std::vector<const Field<DeviceSample>*>& fields) {
    return json(sample, sample.devices, fields, "devices");
}

std::string processQueryCsv(const MachineSample& sample,
                            const std::vector<const Field<ProcessSample>*>& fields,
                            const CsvOptions& options) {
    return csv(sample, sample.processes, fields, options);
}

std::string processQueryJson(const MachineSample& sample,
                             const std::vector<const Field<ProcessSample>*>& fields) {
    return json(sample, sample.processes, fields, "processes");
}

}  // namespace mtia::smi
