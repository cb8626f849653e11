#include "machine_sample.hpp"

#include "smi_error.hpp"

#include <chrono>
#include <cstdio>

namespace mtia::smi {

ManagementSession::ManagementSession() {
    check(mtiamlInit(), "mtiamlInit");
}
ManagementSession::~ManagementSession() {
    mtiamlShutdown();
}

MachineSample takeSample() {
    MachineSample sample;
    sample.timeMs = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                              std::chrono::system_clock::now().time_since_epoch())
                                              .count());
    int32_t count = 0;
    check(mtiamlDeviceGetCount(&count), "mtiamlDeviceGetCount");
    for (int32_t dev = 0; dev < count; ++dev) {
        DeviceSample device;
        check(mtiamlDeviceGetInfo(dev, &device.info), "mtiamlDeviceGetInfo");
        mtiamlUtilization utilization = MTIAML_UTILIZATION_INIT;
        const mtiaError_t err = mtiamlDeviceGetUtilization(dev, &utilization);
        if (err == mtiaSuccess) {
            device.utilization = utilization.percent;
        } else if (err != mtiaErrorNotSupported) {
            check(err, "mtiamlDeviceGetUtilization");
        }
        sample.devices.push_back(device);

        // Processes come and go between the two calls: retry with the size the library asks for.
        std::vector<mtiamlProcessInfo> infos;
        uint32_t n = 8;
        for (;;) {
            infos.assign(n, mtiamlProcessInfo MTIAML_PROCESS_INFO_INIT);
            uint32_t got = n;
            const mtiaError_t perr = mtiamlDeviceGetProcesses(dev, &got, infos.data());
            if (perr == mtiaSuccess) {
                infos.resize(got);
                break;
            }
            if (perr != mtiaErrorInvalidValue || got <= n) check(perr, "mtiamlDeviceGetProcesses");
            n = got + 8;
        }
        for (const mtiamlProcessInfo& info : infos)
            sample.processes.push_back(ProcessSample{dev, info});
    }
    return sample;
}

std::string uuidText(const uint8_t (&u)[16]) {
    char text[64];
    std::snprintf(text, sizeof text,
                  "MTIA-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
                  u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
                  u[14], u[15]);
    return text;
}

uint64_t toMiB(uint64_t bytes) {
    return bytes >> 20;
}

}  // namespace mtia::smi
