#include "command_log.hpp"
#include "kernels.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <thread>

using mtia::sim::Command;
using mtia::sim::CommandLog;

namespace {

// A command whose fill size survives the trip through the log; seq is the log's to set.
uint64_t appendTagged(CommandLog& log, uint64_t tag) {
    Command c;
    c.cmd.u.fill.size = tag;
    return log.append(c);
}

}  // namespace

TEST(SimCommandLog, FifoAcrossSegmentsWithSpareReuse) {
    CommandLog log;
    uint64_t appended = 0, retired = 0;
    EXPECT_EQ(log.front(), nullptr);
    // Interleave appends and retires so segments fill, link, retire and come back as the spare.
    for (int round = 0; round < 8; ++round) {
        for (size_t i = 0; i < CommandLog::kSegment + 37; ++i) {
            ++appended;
            EXPECT_EQ(appendTagged(log, appended * 10), appended);
        }
        EXPECT_EQ(log.published(), appended);
        for (size_t i = 0; i < CommandLog::kSegment - 5; ++i) {
            Command* c = log.front();
            ASSERT_NE(c, nullptr);
            ++retired;
            EXPECT_EQ(c->seq, retired);
            EXPECT_EQ(c->cmd.u.fill.size, retired * 10);
            log.retire();
        }
    }
    while (Command* c = log.front()) {
        ++retired;
        EXPECT_EQ(c->seq, retired);
        log.retire();
    }
    EXPECT_EQ(retired, appended);
    EXPECT_EQ(log.retired(), appended);
}

TEST(SimCommandLog, RetireDropsReferences) {
    CommandLog log;
    auto owner = std::make_shared<int>(0);  // stands in for a loaded module: only the count matters
    Command c;
    c.holds = owner;
    c.cmd.reserved = mtia::sim::kCommandHolds;
    log.append(c);
    EXPECT_FALSE(c.holds);  // taken over by the log
    EXPECT_EQ(owner.use_count(), 2);
    ASSERT_NE(log.front(), nullptr);
    log.retire();
    EXPECT_EQ(owner.use_count(), 1);
}

TEST(SimCommandLog, OneSubmitterOneEngineConcurrently) {
    CommandLog log;
    constexpr uint64_t kCount = 200'000;
    std::thread producer([&] {
        for (uint64_t i = 1; i <= kCount; ++i) appendTagged(log, i);
    });
    uint64_t seen = 0;
    while (seen < kCount) {
        Command* c = log.front();
        if (c == nullptr) continue;
        ++seen;
        ASSERT_EQ(c->seq, seen);
        ASSERT_EQ(c->cmd.u.fill.size, seen);
        log.retire();
    }
    producer.join();
    EXPECT_EQ(log.front(), nullptr);
}

TEST(SimCommandLog, ArgumentCopiesSurviveTheLog) {
    mtia::sim::Kernel kernel;
    mtiaSimKernelArgs desc{};
    desc.structSize = sizeof(desc);
    desc.count = 3;
    desc.sizes[0] = 1;
    desc.sizes[1] = 100;  // beyond the inline storage
    desc.sizes[2] = 8;
    std::string error;
    ASSERT_TRUE(mtia::sim::layoutArguments(desc, kernel, error)) << error;
    EXPECT_EQ(kernel.offsets[0], 0u);
    EXPECT_EQ(kernel.offsets[1], 16u);  // aligned to min(16, 128)
    EXPECT_EQ(kernel.offsets[2], 120u);
    EXPECT_EQ(kernel.argBytes, 128u);
    unsigned char a = 7;
    unsigned char big[100];
    for (int i = 0; i < 100; ++i) big[i] = static_cast<unsigned char>(i);
    uint64_t c = 0x1122334455667788ull;
    void* args[] = {&a, big, &c};
    CommandLog log;
    Command cmd;
    cmd.cmd.u.kernel.kernel = reinterpret_cast<mtiaDrvKernel>(&kernel);
    cmd.args.assign(kernel, args);  // 128 bytes: on the heap, freed when the command retires
    cmd.cmd.reserved = mtia::sim::kCommandArgs;
    log.append(cmd);
    Command* out = log.front();
    ASSERT_NE(out, nullptr);
    void* pointers[3];
    alignas(16) unsigned char copy[mtia::sim::kMaxArgumentBytes];
    out->args.copyTo(kernel, copy,
                     pointers);  // the kernel's own copy: the command's stays as it was
    EXPECT_EQ(*static_cast<unsigned char*>(pointers[0]), 7);
    EXPECT_EQ(std::memcmp(pointers[1], big, 100), 0);
    EXPECT_EQ(*static_cast<uint64_t*>(pointers[2]), c);
    EXPECT_EQ(pointers[1], copy + 16);
    std::memset(copy, 0, sizeof(copy));
    out->args.copyTo(kernel, copy, pointers);
    EXPECT_EQ(std::memcmp(pointers[1], big, 100), 0);
    log.retire();  // frees the heap copy (ASan would report a leak otherwise)
    // Descriptors the driver refuses.
    mtia::sim::Kernel bad;
    desc.sizes[1] = 0;
    EXPECT_FALSE(mtia::sim::layoutArguments(desc, bad, error));
    desc.sizes[1] = 5000;
    EXPECT_FALSE(mtia::sim::layoutArguments(desc, bad, error));
    desc.sizes[1] = 4;
    desc.count = 33;
    EXPECT_FALSE(mtia::sim::layoutArguments(desc, bad, error));
    desc.count = 3;
    desc.structSize = 8;
    EXPECT_FALSE(mtia::sim::layoutArguments(desc, bad, error));
}
