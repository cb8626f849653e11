#include "html_plot.hpp"

#include "byte_size.hpp"
#include "memory_timeline.hpp"
#include "snapshot_summary.hpp"
#include "stack_labels.hpp"
#include "trace_analysis.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <set>

namespace mtia::mem {

namespace {

// Ten colours told apart by most eyes (and in print); "other" is grey.
constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#86bcb6"};
constexpr const char* kOtherColour = "#bab0ac";
constexpr const char* kStateColour[] = {"#4e79a7", "#f28e2b", "#e8e8e8",
                                        "#ff00ff"};  // by BlockState

constexpr double kChartWidth = 960, kChartHeight = 300, kLeft = 80, kBottom = 40, kTop = 10;
constexpr double kMapWidth = 1100, kMapLabel = 380,
                 kRowHeight = 18;  // the label: address, size, kind, pool
constexpr double kMinSegmentWidth = 40;

const char* const kStyle =
    R"(body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:1300px}
h1{font-size:20px}h2{font-size:17px;border-bottom:1px solid #ccc;padding-bottom:4px;margin-top:32px}
h3{font-size:15px;margin-top:22px}.note{color:#666;font-size:13px}
table{border-collapse:collapse;font-size:13px}td,th{padding:3px 10px;border-bottom:1px solid #eee;text-align:right}
td.site,th.site{text-align:left}.legend{font-size:13px;display:flex;flex-wrap:wrap;gap:6px 16px;margin:6px 0}
.swatch{display:inline-block;width:12px;height:12px;margin-right:5px;vertical-align:-1px}
svg text{font-size:11px;fill:#333}svg .axis{stroke:#999}svg .grid{stroke:#eee}
svg rect.block:hover,svg path.area:hover{opacity:.75})";

std::string escape(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char c : s) {
        switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&#39;"; break;
        default: out += c;
        }
    }
    return out;
}

// The unit a chart's byte axis is labelled in: the largest power of 1024 not above the maximum.
struct ByteUnit {
    double scale;
    const char* name;
};
ByteUnit unitFor(uint64_t max) {
    if (max >= (uint64_t{1} << 40)) return {double(uint64_t{1} << 40), "TiB"};
    if (max >= (uint64_t{1} << 30)) return {double(uint64_t{1} << 30), "GiB"};
    if (max >= (uint64_t{1} << 20)) return {double(uint64_t{1} << 20), "MiB"};
    if (max >= (uint64_t{1} << 10)) return {double(uint64_t{1} << 10), "KiB"};
    return {1, "B"};
}

// About `count` round tick values from 0 to max: steps of 1, 2 or 5 times a power of ten.
std::vector<double> ticks(double max, int count) {
    if (!(max > 0)) return {0};
    const double rough = max / count;
    const double power = std::pow(10, std::floor(std::log10(rough)));
    double step = power;
    for (double m : {1.0, 2.0, 5.0, 10.0})
        if (m * power >= rough) {
            step = m * power;
            break;
        }
    std::vector<double> out;
    for (double v = 0; v <= max * 1.0001 && out.size() < 100; v += step) out.push_back(v);
    return out;
}

// Tick labels with as many decimals as their step needs, the same for all ticks of an axis.
std::string tickText(double v, const std::vector<double>& all) {
    const double step = all.size() > 1 ? all[1] - all[0] : 1;
    const int decimals = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
    return fmt::format("{:.{}f}", v, std::min(decimals, 9));
}

class Page {
public:
    Page(const Snapshot& snap, const PlotOptions& options) : snap_(snap), o_(options) {}

    std::string render(const std::string& title) {
        put("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>mtia-mem "
            "plot: {}</title>\n",
            escape(title));
        put("<style>{}</style></head><body>\n<h1>Memory of {}</h1>\n", kStyle, escape(title));
        put("<p class=\"note\">{}; {} segment{}; {}.</p>\n",
            snap_.shape == Shape::SegmentList ? "PyTorch 1.13 list of segments"
                                              : "PyTorch 2.x snapshot",
            snap_.segments.size(), snap_.segments.size() == 1 ? "" : "s",
            snap_.hasTraces ? "with recorded history" : "no recorded history (no timeline)");
        const std::vector<DeviceSummary> summaries = summarize(snap_);
        const std::vector<DeviceTraceReport> traces = analyzeTraces(snap_);
        std::set<int> devices;
        for (const auto& s : summaries) devices.insert(s.device);
        for (const auto& t : traces) devices.insert(t.device);
        if (devices.empty())
            put("<p>The snapshot holds no segments and no trace entries: nothing to draw.</p>\n");
        for (int device : devices) {
            const auto s = std::find_if(summaries.begin(), summaries.end(),
                                        [&](const auto& x) { return x.device == device; });
            const auto t = std::find_if(traces.begin(), traces.end(),
                                        [&](const auto& x) { return x.device == device; });
            deviceSection(device, s != summaries.end() ? &*s : nullptr,
                          t != traces.end() ? &*t : nullptr);
        }
        put("</body></html>\n");
        return std::move(html_);
    }

private:
    template <typename... Args>
    void put(fmt::format_string<Args...> f, Args&&... args) {
        fmt::format_to(std::back_inserter(html_), f, std::forward<Args>(args)...);
    }

    void deviceSection(int device, const DeviceSummary* summary, const DeviceTraceReport* trace) {
        put("<section id=\"device-{}\">\n<h2>Device {}</h2>\n", device, device);
        if (summary != nullptr)
            put("<p class=\"note\">{} segment{}: {} reserved, {} allocated, {} free cached "
                "(fragmentation {:.3f}).</p>\n",
                summary->segments, summary->segments == 1 ? "" : "s",
                formatBytes(summary->reserved), formatBytes(summary->allocated),
                formatBytes(summary->inactive), summary->fragmentation());
        timelineSection(trace);
        segmentMap(device);
        sitesTable(summary, trace);
        put("</section>\n");
    }

    // 1. Active memory over time.
    void timelineSection(const DeviceTraceReport* trace) {
        put("<h3>Active memory over time</h3>\n");
        if (trace == nullptr) {
            put("<p class=\"note\">No trace for this device: the snapshot was taken without "
                "recording history "
                "(torch.cuda.memory._record_memory_history), so there is no timeline.</p>\n");
            return;
        }
        const Timeline t = buildTimeline(snap_, *trace, o_.timelineSites, o_.maxPoints);
        uint64_t maxTotal = 1;
        for (const auto& p : t.bytes) {
            uint64_t sum = 0;
            for (uint64_t b : p) sum += b;
            maxTotal = std::max(maxTotal, sum);
        }
        const ByteUnit unit = unitFor(maxTotal);
        const double yMax = double(maxTotal) / unit.scale;
        // Seconds on the axis, or milliseconds or microseconds for short traces (round tick labels
        // either way).
        const double span = t.x.empty() ? 1.0 : t.x.back();
        const double timeScale = !t.timed || span >= 1 ? 1 : span >= 1e-3 ? 1e3 : 1e6;
        const char* timeUnit = timeScale == 1 ? "s" : timeScale == 1e3 ? "ms" : "us";
        const double xMax = std::max(span, 1e-9);
        const double plotW = kChartWidth - kLeft - 20, plotH = kChartHeight - kTop - kBottom;
        auto X = [&](double x) { return kLeft + plotW * x / xMax; };
        auto Y = [&](double bytes) { return kTop + plotH * (1 - bytes / unit.scale / yMax); };

        put("<p class=\"note\">Live bytes (allocated, or freed and waiting for other streams) over "
            "{} entries; peak "
            "{} ({} bytes){}. Series: the allocation sites live at the peak.{}</p>\n",
            trace->entries, formatBytes(trace->peakBytes), trace->peakBytes,
            trace->timed && trace->peakEntry
                ? fmt::format(" at +{:.3f} s", (trace->peakUs - trace->firstUs) / 1e6)
                : "",
            t.x.size() < trace->entries + 1
                ? fmt::format(" Drawn with {} points: each span of entries by its lowest "
                              "and highest point.",
                              t.x.size())
                : "");
        put("<svg width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" role=\"img\" "
            "aria-label=\"active memory over time\">\n",
            kChartWidth, kChartHeight, kChartWidth, kChartHeight);
        const std::vector<double> yTicks = ticks(yMax, 5), xTicks = ticks(xMax * timeScale, 8);
        for (double v : yTicks) {
            const double y = kTop + plotH * (1 - v / yMax);
            put("<line class=\"grid\" x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\"/>"
                "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n",
                kLeft, kLeft + plotW, y, y, kLeft - 6, y + 4, tickText(v, yTicks));
        }
        for (double v : xTicks) {
            const double x = X(v / timeScale);
            put("<line class=\"axis\" x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\"/>"
                "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n",
                x, x, kTop + plotH, kTop + plotH + 5, x, kTop + plotH + 18, tickText(v, xTicks));
        }
        put("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", kLeft + plotW / 2,
            kChartHeight - 4,
            t.timed ? fmt::format("time since the first entry ({})", timeUnit)
                    : "trace entry (the trace has no times)");
        put("<text transform=\"translate(14 {:.1f}) rotate(-90)\" text-anchor=\"middle\">live "
            "memory ({})</text>\n",
            kTop + plotH / 2, unit.name);

        // Stacked areas, the largest site at the bottom.
        const size_t series = t.sites.size() + 1;
        std::vector<double> below(t.x.size(), 0);
        for (size_t s = 0; s < series; ++s) {
            std::string upper, lower;
            std::vector<double> above(below);
            for (size_t i = 0; i < t.x.size(); ++i) above[i] += double(t.bytes[i][s]);
            for (size_t i = 0; i < t.x.size(); ++i)
                fmt::format_to(std::back_inserter(upper), "{}{:.1f},{:.1f}", i ? " L" : "M",
                               X(t.x[i]), Y(above[i]));
            for (size_t i = t.x.size(); i-- > 0;)
                fmt::format_to(std::back_inserter(lower), " L{:.1f},{:.1f}", X(t.x[i]),
                               Y(below[i]));
            const bool other = s == t.sites.size();
            put("<path class=\"area\" d=\"{}{} Z\" fill=\"{}\"><title>{}</title></path>\n", upper,
                lower, other ? kOtherColour : kPalette[s % std::size(kPalette)],
                escape(other ? std::string("other sites") : siteLabel(snap_.stacks, t.sites[s])));
            below = std::move(above);
        }
        put("<line class=\"axis\" x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\"/>\n",
            kLeft, kLeft, kTop, kTop + plotH);
        put("</svg>\n<div class=\"legend\">");
        std::map<StackId, uint64_t> atPeak;
        for (const SiteTotal& s : trace->liveAtPeak.sorted()) atPeak[s.stack] = s.bytes;
        uint64_t shown = 0;
        for (size_t s = 0; s < t.sites.size(); ++s) {
            shown += atPeak[t.sites[s]];
            put("<span><span class=\"swatch\" style=\"background:{}\"></span>{} ({} at the "
                "peak)</span>",
                kPalette[s % std::size(kPalette)], escape(siteLabel(snap_.stacks, t.sites[s])),
                formatBytes(atPeak[t.sites[s]]));
        }
        // "Other sites": memory of sites not live at the peak (or beyond the ones drawn); listed
        // when drawn.
        const uint64_t others = trace->peakBytes - std::min(shown, trace->peakBytes);
        bool otherDrawn = false;
        for (const auto& p : t.bytes) otherDrawn = otherDrawn || p[t.sites.size()] > 0;
        if (otherDrawn || others > 0)
            put("<span><span class=\"swatch\" style=\"background:{}\"></span>other sites ({} at "
                "the peak)</span>",
                kOtherColour, formatBytes(others));
        put("</div>\n");
    }

    // 2. The segment map.
    void segmentMap(int device) {
        put("<h3>Segment map</h3>\n");
        std::vector<const Segment*> segs;
        for (const Segment& s : snap_.segments)
            if (s.device == device) segs.push_back(&s);
        if (segs.empty()) {
            put("<p class=\"note\">No segments on this device when the snapshot was taken.</p>\n");
            return;
        }
        // The largest segments that fit the limits, drawn by address.
        std::stable_sort(segs.begin(), segs.end(),
                         [](auto* a, auto* b) { return a->totalSize > b->totalSize; });
        size_t keep = 0, blocks = 0;
        while (keep < segs.size() && keep < o_.maxSegments &&
               blocks + segs[keep]->blocks.size() <= o_.maxBlocks)
            blocks += segs[keep++]->blocks.size();
        const size_t total = segs.size();
        segs.resize(keep);
        std::sort(segs.begin(), segs.end(),
                  [](auto* a, auto* b) { return a->address < b->address; });
        uint64_t largest = 1;
        for (const Segment* s : segs) largest = std::max(largest, s->totalSize);

        put("<div class=\"legend\">");
        for (auto [state, name] :
             {std::pair{BlockState::ActiveAllocated, "active_allocated (in use)"},
              std::pair{BlockState::ActivePendingFree,
                        "active_pending_free (freed, waiting for streams)"},
              std::pair{BlockState::Inactive, "inactive (free, cached)"}})
            put("<span><span class=\"swatch\" style=\"background:{}\"></span>{}</span>",
                kStateColour[int(state)], name);
        put("</div>\n<p class=\"note\">One bar per segment, by address; its length is proportional "
            "to its size (at "
            "least {} px), its blocks' widths to theirs. Hover a block for its address, size, "
            "state and allocation "
            "site.{}</p>\n",
            kMinSegmentWidth,
            keep < total
                ? fmt::format(" Showing the {} largest of {} segments ({} blocks at most).", keep,
                              total, o_.maxBlocks)
                : "");
        const double barW = kMapWidth - kMapLabel - 10;
        put("<svg width=\"{}\" height=\"{:.0f}\" role=\"img\" aria-label=\"segment map\">\n",
            kMapWidth, kRowHeight * double(segs.size()) + 4);
        for (size_t row = 0; row < segs.size(); ++row) {
            const Segment& s = *segs[row];
            const double y = 2 + kRowHeight * double(row);
            const double w =
                std::max(kMinSegmentWidth, barW * double(s.totalSize) / double(largest));
            std::string tags = s.large ? "large" : "small";
            if (s.expandable) tags += ", expandable";
            if (s.poolId[0] != 0 || s.poolId[1] != 0)
                tags += fmt::format(", pool ({}, {})", s.poolId[0], s.poolId[1]);
            put("<text x=\"0\" y=\"{:.1f}\">0x{:x} {} ({})</text>\n", y + 12, s.address,
                formatBytes(s.totalSize), tags);
            put("<g><title>segment 0x{:x}, {}, {}, stream {}</title><rect x=\"{:.1f}\" "
                "y=\"{:.1f}\" width=\"{:.2f}\" "
                "height=\"{:.1f}\" fill=\"none\" stroke=\"#888\"/></g>\n",
                s.address, formatBytes(s.totalSize), tags, s.stream, kMapLabel, y, w,
                kRowHeight - 4);
            uint64_t offset = 0;
            const double total = double(std::max<uint64_t>(s.totalSize, 1));
            for (const Block& b : s.blocks) {
                const double x0 = kMapLabel + w * double(std::min(offset, s.totalSize)) / total;
                const double bw = std::max(0.5, w * double(b.size) / total);
                offset += b.size;
                put("<rect class=\"block\" x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" "
                    "height=\"{:.1f}\" fill=\"{}\">"
                    "<title>0x{:x} {} {}{}</title></rect>\n",
                    x0, y, bw, kRowHeight - 4, kStateColour[int(b.state)], b.address,
                    formatBytes(b.size), blockStateName(b.state),
                    b.state == BlockState::Inactive
                        ? ""
                        : " " + escape(siteLabel(snap_.stacks, b.stack)));
            }
        }
        put("</svg>\n");
    }

    // 3. The table of top allocation sites.
    void sitesTable(const DeviceSummary* summary, const DeviceTraceReport* trace) {
        put("<h3>Top allocation sites</h3>\n");
        const std::vector<SiteTotal> peak =
            trace != nullptr ? trace->liveAtPeak.sorted() : std::vector<SiteTotal>{};
        const std::vector<SiteTotal> now =
            summary != nullptr ? summary->sites.sorted() : std::vector<SiteTotal>{};
        // The top sites of either list, in the order of the first then the second.
        std::vector<StackId> order;
        std::map<StackId, std::pair<const SiteTotal*, const SiteTotal*>> rows;
        for (const SiteTotal& s : peak) rows[s.stack].first = &s;
        for (const SiteTotal& s : now) rows[s.stack].second = &s;
        for (const auto* list : {&peak, &now})
            for (size_t i = 0; i < std::min(o_.tableSites, list->size()); ++i)
                if (std::find(order.begin(), order.end(), (*list)[i].stack) == order.end())
                    order.push_back((*list)[i].stack);
        if (order.empty()) {
            put("<p class=\"note\">No live blocks.</p>\n");
            return;
        }
        put("<p class=\"note\">Live blocks grouped by allocation stack, named by their innermost "
            "frame of the program "
            "(hover a site for its stack). \"At the peak\": the trace's peak of live bytes "
            "(requested sizes); \"in the "
            "snapshot\": active_allocated blocks of the segments (rounded sizes).</p>\n");
        put("<table><tr><th class=\"site\">site</th><th>bytes at the peak</th><th>blocks</th>"
            "<th>bytes in the snapshot</th><th>blocks</th></tr>\n");
        auto cells = [this](const SiteTotal* s) {
            if (s == nullptr) return put("<td>-</td><td>-</td>");
            put("<td>{}</td><td>{}</td>", formatBytes(s->bytes), s->blocks);
        };
        for (StackId id : order) {
            std::string stack;
            for (const std::string& f : stackLabels(snap_.stacks, id, 32)) stack += f + "\n";
            put("<tr><td class=\"site\" title=\"{}\">{}</td>", escape(stack),
                escape(siteLabel(snap_.stacks, id)));
            cells(rows[id].first);
            cells(rows[id].second);
            put("</tr>\n");
        }
        put("</table>\n");
    }

    const Snapshot& snap_;
    const PlotOptions& o_;
    std::string html_;
};

}  // namespace

std::string renderPlot(const Snapshot& snap, const std::string& title, const PlotOptions& options) {
    return Page(snap, options).render(title);
}

}  // namespace mtia::mem
