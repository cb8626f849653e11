// Fault injection (MTIA_SIM_FAULTS): what the user asked for, and the counters
// that decide at run time which allocation or launch it hits.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace mtia::sim {

struct KernelFaultRule {
    std::string kernel;
    uint64_t launch = 0;  // 1-based launch of that kernel that faults; 0: every launch
};

struct SlowRule {
    int32_t device = -1;  // -1: every device
    int32_t queue = -1;   // creation index on the device, -1: every queue
    uint64_t micros = 0;
};

struct FaultPlan {
    std::vector<uint64_t> allocFailures;  // 1-based numbers of memCreate calls that fail
    std::vector<KernelFaultRule> kernels;
    std::vector<SlowRule> slow;

    bool empty() const { return allocFailures.empty() && kernels.empty() && slow.empty(); }
};

// Parses MTIA_SIM_FAULTS; on failure returns false and error names the variable and the bad item.
bool parseFaultPlan(std::string_view text, FaultPlan& plan, std::string& error);

// The plan of one process plus its counters. Thread-safe.
class FaultInjector {
public:
    explicit FaultInjector(FaultPlan plan);

    // Counts one memCreate; true when the plan says this one fails.
    bool nextAllocFails();
    // Whether the plan names kernels at all (else launches need not be counted).
    bool hasKernelRules() const { return !kernelCounters_.empty(); }
    // Counts one launch of kernel; true when the plan says it faults. Costs nothing without kernel
    // rules.
    bool nextLaunchFaults(std::string_view kernel);
    // Extra nanoseconds every command of queue `queue` (creation index) of device takes.
    uint64_t slowNs(int32_t device, int32_t queue) const;

    const FaultPlan& plan() const { return plan_; }

private:
    struct KernelCounter {
        std::string kernel;
        bool every = false;
        std::vector<uint64_t> launches;
        std::atomic<uint64_t> count{0};
    };

    FaultPlan plan_;
    std::atomic<uint64_t> allocCount_{0};
    std::vector<std::unique_ptr<KernelCounter>> kernelCounters_;  // one per distinct kernel name
};

}  // namespace mtia::sim
