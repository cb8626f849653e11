// mtia-smi: devices, processes and topology of the simulated machine of this
// environment, after nvidia-smi's habits. Reads everything through the public
// management library (<mtia/mtia_ml.h>); it never starts a device. Output
// contract: data only on stdout, errors only on stderr, exit codes in
// smi_error.hpp.
#include "argument_checks.hpp"
#include "machine_sample.hpp"
#include "query_fields.hpp"
#include "smi_error.hpp"
#include "views.hpp"

#include <mtia/mtia_version.h>

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <string>
#include <thread>

namespace {

using namespace mtia::smi;

struct Options {
    bool list = false;
    std::string queryDevice;
    std::string queryApps;
    std::string format;
    bool helpQueryDevice = false;
    bool helpQueryApps = false;
    bool json = false;
    double loopSeconds = 0;
    int64_t count = 0;
    bool detail = false;
    bool allMachines = false;
    double dmonDelay = 1;
    bool topoMatrix = false;
    std::string machinePrefix;
    int64_t snapshotPid = 0;
    std::string snapshotFile;
    double snapshotTimeout = 10;
};

std::string version() {
    return std::to_string(MTIA_VERSION_MAJOR) + "." + std::to_string(MTIA_VERSION_MINOR) + "." +
           std::to_string(MTIA_VERSION_PATCH);
}

// Intervals beyond a day are a typing error rather than a plan (and bound what the sleeps convert).
constexpr double kMostSeconds = 86400;
constexpr int64_t kMostRepeats = INT32_MAX;

void emit(const std::string& text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
}

// Runs tick once, or count times (forever when count is 0) every interval seconds.
void repeat(bool looping, double interval, int64_t count,
            const std::function<void(int64_t)>& tick) {
    if (!looping) {
        tick(0);
        return;
    }
    for (int64_t i = 0; count == 0 || i < count; ++i) {
        if (i > 0) std::this_thread::sleep_for(std::chrono::duration<double>(interval));
        tick(i);
    }
}

int run(const Options& o, CLI::App& app) {
    if (o.helpQueryDevice) {
        emit(fieldHelp(deviceFields(),
                       "List of valid properties to query for the switch \"--query-gpu\":"));
        return kExitOk;
    }
    if (o.helpQueryApps) {
        emit(fieldHelp(
            processFields(),
            "List of valid properties to query for the switch \"--query-compute-apps\":"));
        return kExitOk;
    }
    if (app.got_subcommand("cleanup")) {
        if (!o.machinePrefix.empty() && !o.allMachines)
            throw SmiError(kExitBadArguments, "cleanup --machine-prefix goes with --all-machines");
        ManagementSession session;
        emit(runCleanup(o.allMachines, o.machinePrefix, o.json));
        return kExitOk;
    }
    if (app.got_subcommand("mem")) {
        ManagementSession session;
        emit(runSnapshot(o.snapshotPid, o.snapshotFile, o.snapshotTimeout));
        return kExitOk;
    }
    if (!o.format.empty() && o.queryDevice.empty() && o.queryApps.empty())
        throw SmiError(kExitBadArguments, "--format goes with --query-gpu or --query-compute-apps");
    if (app.get_option("--loop")->count() > 0)
        checkSeconds("-l/--loop", o.loopSeconds, kMostSeconds);
    checkWhole("-c/--count", o.count, 0, kMostRepeats,
               "a number of repeats (0: until interrupted)");

    // Validate every argument before touching the machine: bad arguments are exit 2 whatever its
    // state.
    CsvOptions csv;
    if (!o.format.empty()) csv = parseCsvFormat(o.format);
    std::vector<const Field<DeviceSample>*> deviceSelection;
    std::vector<const Field<ProcessSample>*> appSelection;
    if (!o.queryDevice.empty())
        deviceSelection = selectFields(deviceFields(), o.queryDevice, "--query-gpu");
    if (!o.queryApps.empty())
        appSelection = selectFields(processFields(), o.queryApps, "--query-compute-apps");
    if (!o.json && (!o.queryDevice.empty() || !o.queryApps.empty()) && o.format.empty())
        throw SmiError(
            kExitBadArguments,
            "--query-gpu and --query-compute-apps need --format=csv[,noheader][,nounits] "
            "or --json");

    ManagementSession session;
    const bool looping = o.loopSeconds > 0 || o.count > 0;
    const double interval = o.loopSeconds > 0 ? o.loopSeconds : 1.0;

    if (o.allMachines) {
        if (!deviceSelection.empty() || !appSelection.empty() || o.detail ||
            app.get_subcommands().size() > 0)
            throw SmiError(kExitBadArguments, "--all-machines goes with the default view or -L");
        repeat(looping, interval, o.count, [&](int64_t i) {
            const std::vector<MachineReading> machines = readAllMachines();
            if (o.json) {
                emit(allMachinesJson(machines, o.list, version()));
            } else {
                emit((i > 0 ? "\n" : "") + allMachinesText(machines, o.list, version()));
            }
        });
        return kExitOk;
    }
    if (CLI::App* topo = app.get_subcommand("topo"); topo->parsed()) {
        if (!o.topoMatrix) throw SmiError(kExitBadArguments, "topo: give -m (the device matrix)");
        int32_t count = 0;
        check(mtiamlDeviceGetCount(&count), "mtiamlDeviceGetCount");
        const TopologySample topology = takeTopology(count);
        emit(o.json ? topoJson(topology) : topoText(topology));
        return kExitOk;
    }
    if (CLI::App* dmon = app.get_subcommand("dmon"); dmon->parsed()) {
        checkSeconds("dmon -d/--delay", o.dmonDelay, kMostSeconds);
        repeat(true, o.dmonDelay, o.count, [&](int64_t i) {
            const MachineSample sample = takeSample();
            if (o.json) {
                emit(dmonJson(sample));
            } else {
                emit((i == 0 ? dmonHeader() : std::string()) + dmonRows(sample));
            }
        });
        return kExitOk;
    }
    repeat(looping, interval, o.count, [&](int64_t i) {
        const MachineSample sample = takeSample();
        if (!deviceSelection.empty()) {
            CsvOptions tick = csv;
            if (i > 0) tick.header = false;  // one header for a looping CSV stream
            emit(o.json ? deviceQueryJson(sample, deviceSelection)
                        : deviceQueryCsv(sample, deviceSelection, tick));
        } else if (!appSelection.empty()) {
            CsvOptions tick = csv;
            if (i > 0) tick.header = false;
            emit(o.json ? processQueryJson(sample, appSelection)
                        : processQueryCsv(sample, appSelection, tick));
        } else if (o.list) {
            emit(o.json ? listJson(sample) : listText(sample));
        } else if (o.detail) {
            emit(o.json ? detailJson(sample, version()) : detailText(sample, version()));
        } else {
            emit(o.json ? summaryJson(sample, version())
                        : (i > 0 ? "\n" : "") + summaryText(sample, version()));
        }
    });
    return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    CLI::App app{"mtia-smi: devices, processes and topology of the simulated MTIA machine of this "
                 "environment"};
    app.fallthrough();
    auto* list = app.add_flag("-L,--list-gpus", o.list, "One line per device with its UUID");
    auto* qd =
        app.add_option("--query-gpu,--query-device", o.queryDevice,
                       "Device fields to print, comma-separated (--help-query-gpu lists them)");
    auto* qa = app.add_option(
        "--query-compute-apps", o.queryApps,
        "Process fields to print, comma-separated (--help-query-compute-apps lists them)");
    app.add_option("--format", o.format,
                   "csv[,noheader][,nounits], with --query-gpu or --query-compute-apps");
    auto* hd =
        app.add_flag("--help-query-gpu", o.helpQueryDevice, "List the fields of --query-gpu");
    auto* ha = app.add_flag("--help-query-compute-apps", o.helpQueryApps,
                            "List the fields of --query-compute-apps");
    app.add_flag("--json", o.json, "JSON output (one document per line; JSON Lines when looping)");
    app.add_option("-l,--loop", o.loopSeconds,
                   "Repeat every SEC seconds until interrupted (or -c times)");
    app.add_option("-c,--count", o.count, "Repeat COUNT times (every -l seconds, 1 by default)");
    auto* q = app.add_flag("-q,--query", o.detail, "Every detail of every device and process");
    app.add_flag(
        "--all-machines", o.allMachines,
        "Every simulated machine of this user that a process has used (default view or -L)");
    list->excludes(qd)->excludes(qa)->excludes(q)->excludes(hd)->excludes(ha);
    qd->excludes(qa)->excludes(q)->excludes(hd)->excludes(ha);
    qa->excludes(q)->excludes(hd)->excludes(ha);
    q->excludes(hd)->excludes(ha);
    hd->excludes(ha);

    CLI::App* dmon = app.add_subcommand("dmon", "Scrolling per-device rows under a '#' header");
    dmon->add_option("-d,--delay", o.dmonDelay, "Seconds between rows (default 1)");
    CLI::App* topo = app.add_subcommand("topo", "Topology of the devices");
    topo->add_flag("-m,--matrix", o.topoMatrix,
                   "Device x device link matrix with CPU and NUMA affinity");
    CLI::App* cleanup = app.add_subcommand(
        "cleanup",
        "Reap the slots of dead processes and remove registries no live process uses (this "
        "environment's machine; every machine of the user with --all-machines)");
    cleanup->add_option(
        "--machine-prefix", o.machinePrefix,
        "With --all-machines: only machines whose MTIA_SIM_MACHINE name starts with PREFIX");
    CLI::App* mem = app.add_subcommand("mem", "Memory debugging of a live process");
    CLI::App* snapshot = mem->add_subcommand(
        "snapshot", "Ask process PID to write its memory snapshot to FILE (pickle; JSON when FILE "
                    "ends in .json). "
                    "It has allocation traces only when the process records memory history "
                    "(mtiaMemoryRecordHistory); else segments and blocks only");
    snapshot->add_option("-p,--pid", o.snapshotPid, "The process")->required();
    snapshot->add_option("-o,--output", o.snapshotFile, "Where the snapshot goes")->required();
    snapshot->add_option("--timeout", o.snapshotTimeout,
                         "Seconds to wait for the process's answer (default 10)");
    mem->require_subcommand(1);
    app.require_subcommand(0, 1);

    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        std::fprintf(stderr, "mtia-smi: %s\nRun with --help for more information.\n", e.what());
        return kExitBadArguments;
    }
    try {
        return run(o, app);
    } catch (const SmiError& e) {
        std::fprintf(stderr, "mtia-smi: %s\n", e.what());
        return e.exitCode();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "mtia-smi: internal error: %s\n", e.what());
        return kExitInternal;
    }
}
