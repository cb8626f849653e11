#include "core/options.hpp"

#include "core/error.hpp"

#include <algorithm>

namespace mtia {
namespace {

std::vector<int> parseDeviceList(std::string_view key, std::string_view value) {
    std::vector<int> devices;
    if (value.empty())
        return devices;  // set but empty: no device is visible (as CUDA_VISIBLE_DEVICES="")
    size_t start = 0;
    while (start <= value.size()) {
        size_t comma = value.find(',', start);
        if (comma == std::string_view::npos) comma = value.size();
        std::string_view item = value.substr(start, comma - start);
        int dev = static_cast<int>(parseInt(key, item, 0, 1023));
        if (std::find(devices.begin(), devices.end(), dev) != devices.end())
            fail(mtiaErrorInvalidValue, "{}='{}' is not valid: device {} is listed twice", key,
                 value, dev);
        devices.push_back(dev);
        start = comma + 1;
    }
    return devices;
}

}  // namespace

RuntimeOptions readRuntimeOptions(const EnvLookup& env) {
    RuntimeOptions o;
    if (auto v = env("MTIA_LOG_LEVEL"))
        o.logLevel = static_cast<LogLevel>(
            parseChoice("MTIA_LOG_LEVEL", *v, {"trace", "debug", "info", "warn", "error", "off"}));
    if (auto v = env("MTIA_DRIVER")) o.driver = *v;
    if (auto v = env("MTIA_OOM_SNAPSHOT")) o.oomSnapshot = *v;
    if (auto v = env("MTIA_VISIBLE_DEVICES"))
        o.visibleDevices = parseDeviceList("MTIA_VISIBLE_DEVICES", *v);
    return o;
}

}  // namespace mtia
