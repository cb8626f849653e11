// mtia-smi cleanup: frees the slots of dead processes and removes the
// registries (with their lock files) that no live process uses, for the
// machine of the environment or, with --all-machines, every machine of the
// user (--machine-prefix narrows that to machines whose name starts so).
#include "smi_error.hpp"
#include "views.hpp"

#include <cstring>

namespace mtia::smi {
namespace {

struct Cleaned {
    std::string description;  // "" for the machine of the environment
    mtiamlCleanupInfo info = MTIAML_CLEANUP_INFO_INIT;
    bool missing = false;  // the machine has no registry
};

std::string machineNameOf(const std::string& description) {
    const char* marker = "machine=";
    const size_t at = description.find(marker);
    return at == std::string::npos ? std::string() : description.substr(at + std::strlen(marker));
}

std::string line(const Cleaned& c) {
    if (c.missing) return "No registry for the machine of this environment: nothing to clean up\n";
    std::string out = c.info.registry;
    out += ": reaped " + std::to_string(c.info.reapedSlots) + " dead process slot(s); ";
    if (c.info.removed) {
        out += "removed (no live process)\n";
    } else {
        out += "kept (" + std::to_string(c.info.liveProcesses) +
               " live process(es) or a process has it open)\n";
    }
    return out;
}

}  // namespace

std::string runCleanup(bool allMachines, const std::string& prefix, bool json) {
    std::vector<Cleaned> done;
    if (!allMachines) {
        Cleaned c;
        const mtiaError_t err = mtiamlMachineCleanup(MTIAML_MACHINE_CURRENT, &c.info);
        if (err == mtiaErrorNotFound) {
            c.missing = true;
        } else {
            check(err, "mtiamlMachineCleanup");
        }
        done.push_back(c);
    } else {
        uint32_t count = 0;
        check(mtiamlMachineGetCount(&count), "mtiamlMachineGetCount");
        for (uint32_t i = 0; i < count; ++i) {
            char description[512];
            const mtiaError_t derr =
                mtiamlMachineGetDescription(i, description, sizeof description);
            Cleaned c;
            if (derr == mtiaSuccess) {
                c.description = description;
            } else if (derr == mtiaErrorNotFound) {
                continue;  // removed since the listing
            } else if (derr != mtiaErrorInitializationError) {
                check(derr, "mtiamlMachineGetDescription");
            }  // an unreadable registry (half-created, poisoned) is cleaned up like any other
            if (!prefix.empty() &&
                machineNameOf(c.description).compare(0, prefix.size(), prefix) != 0)
                continue;
            const mtiaError_t err = mtiamlMachineCleanup(i, &c.info);
            if (err == mtiaErrorNotFound) continue;
            check(err, "mtiamlMachineCleanup");
            done.push_back(c);
        }
    }
    if (!json) {
        std::string out;
        for (const Cleaned& c : done) out += line(c);
        if (done.empty()) out = "No registry to clean up\n";
        return out;
    }
    JsonBuilder b;
    b.beginObject().number("schema_version", kSchemaVersion).beginArray("registries");
    for (const Cleaned& c : done) {
        if (c.missing) continue;
        b.beginObject().string("registry", c.info.registry);
        if (c.description.empty()) {
            b.null("machine");
        } else {
            b.string("machine", c.description);
        }
        b.number("reaped_slots", c.info.reapedSlots)
            .number("live_processes", c.info.liveProcesses)
            .raw("removed", c.info.removed ? "true" : "false")
            .endObject();
    }
    b.endArray().endObject();
    return b.text() + "\n";
}

}  // namespace mtia::smi
