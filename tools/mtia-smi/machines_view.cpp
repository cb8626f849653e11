// --all-machines: the default view or -L of every simulated machine of this user.
#include "smi_error.hpp"
#include "views.hpp"

#include <mtia/mtia_runtime.h>

#include <chrono>
#include <cstdio>
#include <thread>

namespace mtia::smi {

std::vector<MachineReading> readAllMachines() {
    std::vector<MachineReading> out;
    uint32_t count = 0;
    check(mtiamlMachineGetCount(&count), "mtiamlMachineGetCount");
    for (uint32_t i = 0; i < count; ++i) {
        char description[512];
        mtiaError_t err = mtiamlMachineGetDescription(i, description, sizeof description);
        // A registry that another process is creating right now reads as unavailable for a few
        // microseconds: look again before calling it broken.
        for (int retry = 0; retry < 5 && err == mtiaErrorInitializationError; ++retry) {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            err = mtiamlMachineGetDescription(i, description, sizeof description);
        }
        if (err == mtiaErrorNotFound) continue;  // its registry was removed since the listing
        // Another user's object under our name, or one half-created or of another layout: the other
        // machines are still worth showing, so this one is only reported.
        if (err == mtiaErrorNotPermitted || err == mtiaErrorInitializationError) {
            std::fprintf(stderr, "mtia-smi: skipping machine %u: %s\n", i,
                         mtiaGetLastErrorMessage());
            continue;
        }
        check(err, "mtiamlMachineGetDescription");
        check(mtiamlMachineSelect(i), "mtiamlMachineSelect");
        out.push_back(MachineReading{description, takeSample()});
    }
    return out;
}

std::string allMachinesText(const std::vector<MachineReading>& machines, bool list,
                            const std::string& version) {
    std::string out;
    for (size_t i = 0; i < machines.size(); ++i) {
        if (i > 0) out += "\n";
        out += "Machine: " + machines[i].description + "\n";
        out += list ? listText(machines[i].sample) : summaryText(machines[i].sample, version);
    }
    if (machines.empty()) out += "No simulated machine has been used by this user\n";
    return out;
}

std::string allMachinesJson(const std::vector<MachineReading>& machines, bool list,
                            const std::string& version) {
    JsonBuilder json;
    json.beginObject().number("schema_version", kSchemaVersion).beginArray("machines");
    for (const MachineReading& m : machines) {
        std::string view = list ? listJson(m.sample) : summaryJson(m.sample, version);
        view.pop_back();  // the newline that ends a document
        json.beginObject().string("machine", m.description).raw("view", view).endObject();
    }
    json.endArray().endObject();
    return json.text() + "\n";
}

}  // namespace mtia::smi
