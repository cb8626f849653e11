// mtia-mem: memory snapshots and what-if replays, for people debugging
// device memory. Usage and the subcommands: README.md beside this file.
// The only file that includes CLI11: the subcommands describe their options as
// plain data (command_spec.hpp) and this file builds the command line.
#include "commands.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <charconv>
#include <cstdio>
#include <exception>
#include <memory>

namespace {

using mtia::mem::CommandSpec;
using mtia::mem::OptionSpec;
using mtia::mem::WholeAtLeast;

// Thread-safe.
CLI::Validator wholeAtLeast(long long least, const std::string& what) {
    return CLI::Validator(
        [least, what](std::string& given) -> std::string {
            long long value = 0;
            const char* end = given.data() + given.size();
            const auto [stop, ec] = std::from_chars(given.data(), end, value);
            if (ec == std::errc() && stop == end && value >= least) return {};
            return fmt::format("got {}; give a whole number of {}, {} or more", given, what, least);
        },
        fmt::format("INT>={}", least));
}

void addOption(CLI::App& cmd, const OptionSpec& spec) {
    if (bool* const* flag = std::get_if<bool*>(&spec.target)) {
        cmd.add_flag(spec.names, **flag, spec.help);
        return;
    }
    CLI::Option* option = std::visit(
        [&](auto* target) { return cmd.add_option(spec.names, *target, spec.help); }, spec.target);
    if (spec.required) option->required();
    if (spec.showDefault) option->capture_default_str();
    if (spec.atLeast) option->check(wholeAtLeast(spec.atLeast->least, spec.atLeast->what));
    if (!spec.oneOf.empty()) option->check(CLI::IsMember(std::vector<const char*>(spec.oneOf)));
}

void addCommand(CLI::App& app, CommandSpec spec) {
    CLI::App* cmd = app.add_subcommand(spec.name, spec.description);
    for (const OptionSpec& option : spec.options) addOption(*cmd, option);
    cmd->callback(std::move(spec.run));
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"mtia-mem: memory snapshots (summary, diff, trace, plot, export) and what-if "
                 "replays of recorded allocator traces"};
    app.require_subcommand(1);
    addCommand(app, mtia::mem::replayCommand());
    addCommand(app, mtia::mem::generateCommand());
    addCommand(app, mtia::mem::summaryCommand());
    addCommand(app, mtia::mem::diffCommand());
    addCommand(app, mtia::mem::traceCommand());
    addCommand(app, mtia::mem::plotCommand());
    addCommand(app, mtia::mem::exportCommand());
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    } catch (const std::exception& e) {
        fmt::print(stderr, "mtia-mem: {}\n", e.what());
        return 1;
    }
    return 0;
}
