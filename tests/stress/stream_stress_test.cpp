// Stress (streams-graphs-anchors.md (c), item 91): 16 threads, 3000 random stream/event operations
// each on a shared pool of handles that other threads destroy concurrently. Deterministic in its
// operation count (fixed seed per thread), not time-based; the build runs it under ThreadSanitizer
// as well.
#include "stream_stress.hpp"

#include <gtest/gtest.h>

TEST(Stress, StreamsAndEventsFromSixteenThreads) {
    mtia_stress::Options options;
    options.threads = 16;
    options.opsPerThread = 3000;
    const auto start = std::chrono::steady_clock::now();
    const mtia_stress::Report report = mtia_stress::runStreamStress(options);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (const std::string& f : report.failures) ADD_FAILURE() << f;
    for (int op = 0; op < mtia_stress::kOpCount; ++op)
        EXPECT_GT(report.perOp[op], 0u) << mtia_stress::opName(op) << " never ran";
    EXPECT_GT(report.hostFuncsLaunched, 0u);
    std::string mix;
    for (int op = 0; op < mtia_stress::kOpCount; ++op)
        mix += std::string(op ? ", " : "") + mtia_stress::opName(op) + " " +
               std::to_string(report.perOp[op]);
    std::printf("%llu operations in %.2f s (%llu refused with a destroyed handle, %llu host "
                "functions): %s\n",
                static_cast<unsigned long long>(report.ops), seconds,
                static_cast<unsigned long long>(report.invalidHandle),
                static_cast<unsigned long long>(report.hostFuncsLaunched), mix.c_str());
}
