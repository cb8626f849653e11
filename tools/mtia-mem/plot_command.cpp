// mtia-mem plot SNAP -o OUT.html [--top N] [--json]
#include "commands.hpp"
#include "html_plot.hpp"
#include "json_writer.hpp"
#include "load_snapshot.hpp"

#include <fmt/format.h>

#include <fstream>
#include <memory>

namespace mtia::mem {

namespace {

struct PlotArgs {
    std::string path, output;
    size_t top = 10;
    bool json = false;
};

void run(const PlotArgs& a) {
    const Snapshot snap = loadSnapshot(a.path);
    PlotOptions o;
    o.tableSites = a.top;
    const std::string html = renderPlot(snap, a.path, o);
    std::ofstream file(a.output, std::ios::binary);
    if (!file) throw std::runtime_error(fmt::format("{}: cannot write", a.output));
    file.write(html.data(), static_cast<std::streamsize>(html.size()));
    file.close();
    if (!file) throw std::runtime_error(fmt::format("{}: write failed", a.output));
    if (a.json) {
        fmt::print("{}", JsonWriter()
                             .beginObject()
                             .member("file", a.path)
                             .member("output", a.output)
                             .member("bytes", html.size())
                             .endObject()
                             .finish());
    } else {
        fmt::print("{}: {} bytes of HTML; open it in a browser\n", a.output, html.size());
    }
}

}  // namespace

CommandSpec plotCommand() {
    auto args = std::make_shared<PlotArgs>();
    return {.name = "plot",
            .description = "Write one self-contained HTML page (no network needed): active memory "
                           "over time stacked "
                           "by allocation site, the segment map with blocks coloured by state, and "
                           "the table of the "
                           "top allocation sites, per device",
            .options = {{.names = "SNAP",
                         .target = &args->path,
                         .help = "snapshot file (pickle or JSON; PyTorch 2.x or 1.13)",
                         .required = true},
                        {.names = "-o,--output",
                         .target = &args->output,
                         .help = "the HTML file to write",
                         .required = true},
                        topOption(args->top),
                        {.names = "--json",
                         .target = &args->json,
                         .help = "print one JSON object (what was written) instead of text"}},
            .run = [args] { run(*args); }};
}

}  // namespace mtia::mem
