#include "fallback_counts.h"

#include <mutex>

namespace torch_mtia {
namespace {

std::mutex& countsMutex() {
    static std::mutex mu;
    return mu;
}

std::map<std::string, uint64_t>& counts() {
    static auto* table = new std::map<std::string, uint64_t>();  // never destroyed: used until exit
    return *table;
}

}  // namespace

void countFallback(const std::string& name) {
    std::lock_guard lock(countsMutex());
    ++counts()[name];
}

std::map<std::string, uint64_t> fallbackCounts() {
    std::lock_guard lock(countsMutex());
    return counts();
}

void resetFallbackCounts() {
    std::lock_guard lock(countsMutex());
    counts().clear();
}

}  // namespace torch_mtia
