#include "faults.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace mtia::sim {
namespace {

constexpr std::string_view kSyntax = "expected comma-separated items alloc=N, kernel=NAME, "
                                     "kernel=NAME@K, slow=US, slow=D:US or slow=D.Q:US "
                                     "(N, K >= 1)";

bool parseNumber(std::string_view text, uint64_t& value) {
    if (text.empty()) return false;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    return ec == std::errc() && end == text.data() + text.size();
}

bool parseIndex(std::string_view text, int32_t& value) {
    uint64_t v = 0;
    if (!parseNumber(text, v) || v > 0x7fffffff) return false;
    value = static_cast<int32_t>(v);
    return true;
}

bool parseSlow(std::string_view spec, SlowRule& rule) {
    const size_t colon = spec.find(':');
    if (colon == std::string_view::npos) return parseNumber(spec, rule.micros);
    if (!parseNumber(spec.substr(colon + 1), rule.micros)) return false;
    std::string_view target = spec.substr(0, colon);
    const size_t dot = target.find('.');
    if (dot == std::string_view::npos) return parseIndex(target, rule.device);
    return parseIndex(target.substr(0, dot), rule.device) &&
           parseIndex(target.substr(dot + 1), rule.queue);
}

bool parseItem(std::string_view item, FaultPlan& plan) {
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) return false;
    const std::string_view key = item.substr(0, eq);
    const std::string_view value = item.substr(eq + 1);
    if (key == "alloc") {
        uint64_t n = 0;
        if (!parseNumber(value, n) || n == 0) return false;
        plan.allocFailures.push_back(n);
        return true;
    }
    if (key == "kernel") {
        KernelFaultRule rule;
        const size_t at = value.find('@');
        rule.kernel = std::string(value.substr(0, at));
        if (rule.kernel.empty()) return false;
        if (at != std::string_view::npos &&
            (!parseNumber(value.substr(at + 1), rule.launch) || rule.launch == 0)) {
            return false;
        }
        plan.kernels.push_back(std::move(rule));
        return true;
    }
    if (key == "slow") {
        SlowRule rule;
        if (!parseSlow(value, rule)) return false;
        plan.slow.push_back(rule);
        return true;
    }
    return false;
}

}  // namespace

bool parseFaultPlan(std::string_view text, FaultPlan& plan, std::string& error) {
    plan = FaultPlan{};
    if (text.empty()) return true;
    size_t pos = 0;
    for (;;) {
        const size_t comma = text.find(',', pos);
        const std::string_view item =
            text.substr(pos, comma == std::string_view::npos ? text.npos : comma - pos);
        if (!parseItem(item, plan)) {
            error = fmt::format("MTIA_SIM_FAULTS='{}': item '{}' is not valid: {}", text, item,
                                kSyntax);
            plan = FaultPlan{};
            return false;
        }
        if (comma == std::string_view::npos) return true;
        pos = comma + 1;
    }
}

FaultInjector::FaultInjector(FaultPlan plan) : plan_(std::move(plan)) {
    for (const KernelFaultRule& rule : plan_.kernels) {
        auto it = std::find_if(kernelCounters_.begin(), kernelCounters_.end(),
                               [&](const auto& c) { return c->kernel == rule.kernel; });
        if (it == kernelCounters_.end()) {
            kernelCounters_.push_back(std::make_unique<KernelCounter>());
            kernelCounters_.back()->kernel = rule.kernel;
            it = kernelCounters_.end() - 1;
        }
        if (rule.launch == 0) {
            (*it)->every = true;
        } else {
            (*it)->launches.push_back(rule.launch);
        }
    }
}

bool FaultInjector::nextAllocFails() {
    if (plan_.allocFailures.empty()) return false;
    const uint64_t n = allocCount_.fetch_add(1, std::memory_order_relaxed) + 1;
    return std::find(plan_.allocFailures.begin(), plan_.allocFailures.end(), n) !=
           plan_.allocFailures.end();
}

bool FaultInjector::nextLaunchFaults(std::string_view kernel) {
    for (const auto& counter : kernelCounters_) {
        if (counter->kernel != kernel) continue;
        const uint64_t n = counter->count.fetch_add(1, std::memory_order_relaxed) + 1;
        return counter->every || std::find(counter->launches.begin(), counter->launches.end(), n) !=
                                     counter->launches.end();
    }
    return false;
}

uint64_t FaultInjector::slowNs(int32_t device, int32_t queue) const {
    // Overlapping rules do not add up: the largest delay that matches wins.
    uint64_t micros = 0;
    for (const SlowRule& rule : plan_.slow) {
        if (rule.device >= 0 && rule.device != device) continue;
        if (rule.queue >= 0 && rule.queue != queue) continue;
        micros = std::max(micros, rule.micros);
    }
    return micros > UINT64_MAX / 1000 ? UINT64_MAX : micros * 1000;
}

}  // namespace mtia::sim
