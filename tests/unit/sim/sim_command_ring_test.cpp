#include "command.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

using mtia::sim::Command;
using mtia::sim::CommandRing;

namespace {

Command numbered(uint64_t seq) {
  Command c;
  c.seq = seq;
  return c;
}

std::vector<uint64_t> drain(CommandRing& ring) {
  std::vector<uint64_t> seqs;
  while (!ring.empty()) {
    Command c;
    ring.pop(c);
    seqs.push_back(c.seq);
  }
  return seqs;
}

}  // namespace

TEST(SimCommandRing, FifoAcrossGrowthAndWrapAround) {
  CommandRing ring;
  uint64_t next = 1;
  std::vector<uint64_t> expected;
  // Interleave pushes and pops so the ring wraps before it grows, several times over.
  for (int round = 0; round < 6; ++round) {
    for (int i = 0; i < 11 * (round + 1); ++i) ring.push(numbered(next++));
    for (int i = 0; i < 7 * (round + 1); ++i) {
      Command c;
      ring.pop(c);
      expected.push_back(c.seq);
    }
  }
  for (uint64_t s : drain(ring)) expected.push_back(s);
  ASSERT_EQ(expected.size(), next - 1);
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(expected[i], i + 1);
}

TEST(SimCommandRing, PushFrontReturnsTakenCommandsInOrder) {
  CommandRing ring;
  for (uint64_t s = 1; s <= 16; ++s) ring.push(numbered(s));  // full: the next push grows it
  Command taken[5];
  for (Command& c : taken) ring.pop(c);
  ring.push(numbered(17));
  // Give back 3, 4, 5 (the engine ran 1 and 2), last first, as Queue::giveBack does.
  for (int i = 4; i >= 2; --i) ring.pushFront(std::move(taken[i]));
  for (uint64_t s = 18; s <= 40; ++s) ring.push(numbered(s));  // grows with the given-back ones inside
  const std::vector<uint64_t> seqs = drain(ring);
  ASSERT_EQ(seqs.size(), 38u);
  for (size_t i = 0; i < seqs.size(); ++i) EXPECT_EQ(seqs[i], i + 3);
  // pushFront into an empty ring, then into a full one.
  ring.pushFront(numbered(2));
  ring.pushFront(numbered(1));
  EXPECT_EQ(drain(ring), (std::vector<uint64_t>{1, 2}));
}

TEST(SimCommandRing, ArgumentCopiesSurviveMoves) {
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
  CommandRing ring;
  Command cmd;
  cmd.args.assign(kernel, args);
  ring.push(std::move(cmd));
  Command out;
  ring.pop(out);
  void* pointers[3];
  out.args.pointers(kernel, pointers);
  EXPECT_EQ(*static_cast<unsigned char*>(pointers[0]), 7);
  EXPECT_EQ(std::memcmp(pointers[1], big, 100), 0);
  EXPECT_EQ(*static_cast<uint64_t*>(pointers[2]), c);
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
