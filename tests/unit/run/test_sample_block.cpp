#include <cstdint>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "run/column_block.hpp"
#include "run/sample_block.hpp"

namespace stepscope {
namespace {

// Room for every stack id the tests use, the largest included.
constexpr size_t kStacks = size_t{UINT32_MAX} + 1;

void expect_same_samples(const std::vector<Sample>& a, const std::vector<Sample>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].ts_ns, b[i].ts_ns) << i;
    EXPECT_EQ(a[i].pid, b[i].pid) << i;
    EXPECT_EQ(a[i].tid, b[i].tid) << i;
    EXPECT_EQ(a[i].stack, b[i].stack) << i;
    EXPECT_EQ(a[i].state, b[i].state) << i;
    EXPECT_EQ(a[i].holds_gil, b[i].holds_gil) << i;
  }
}

std::vector<Sample> round_trip(const std::vector<Sample>& samples) {
  std::vector<Sample> decoded;
  EXPECT_EQ(decode_sample_block(encode_sample_block(samples), samples.size(), kStacks, decoded), "");
  return decoded;
}

// Values at the ends of every column's range, out of time order, survive exactly.
TEST(SampleBlock, ExtremeValuesRoundTrip) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max(), kMin = std::numeric_limits<int64_t>::min();
  constexpr int32_t kMax32 = std::numeric_limits<int32_t>::max(), kMin32 = std::numeric_limits<int32_t>::min();
  std::vector<Sample> samples = {
      {kMax, kMax32, kMin32, std::numeric_limits<StackId>::max(), ThreadState::kDiskWait, true},
      {kMin, kMin32, kMax32, 0, ThreadState::kUnknown, false},
      {0, 0, 0, 7, ThreadState::kIdle, true},
      {-5, 4194304, 4194305, 3, ThreadState::kRunning, false},
  };
  expect_same_samples(samples, round_trip(samples));
}

// What a recorder's rounds look like: a few threads at a steady period, stacks mostly repeated.
TEST(SampleBlock, ARecordingsRoundsTakeAFewBytesEach) {
  std::vector<Sample> samples;
  for (int64_t round = 0; round < 4000; ++round) {
    int64_t ts = 1'000'000'000'000 + round * 10'000'000 + (round * 7919) % 40'000;
    for (int32_t thread = 0; thread < 3; ++thread) {
      auto stack = static_cast<StackId>(thread == 0 ? 40 + (round / 50) % 5 : 12);
      samples.push_back({ts, 1000 + thread * 17, 1000 + thread * 17 + (thread == 2), stack,
                         thread == 0 ? ThreadState::kRunning : ThreadState::kIdle, thread == 0});
    }
  }
  std::string block = encode_sample_block(samples);
  EXPECT_LT(block.size(), samples.size() * 2) << "bytes per sample: " << double(block.size()) / double(samples.size());
  expect_same_samples(samples, round_trip(samples));
}

TEST(SampleBlock, AppendsToWhatTheVectorHolds) {
  std::vector<Sample> first = {{1, 2, 3, 4, ThreadState::kRunning, false}};
  std::vector<Sample> out = first;
  ASSERT_EQ(decode_sample_block(encode_sample_block(first), 1, kStacks, out), "");
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].tid, 3);
}

TEST(SampleBlock, BadBytesAreRefusedAndLeaveTheVectorAlone) {
  std::vector<Sample> samples = {{10, 1, 1, 2, ThreadState::kRunning, true}, {20, 1, 2, 3, ThreadState::kIdle, false}};
  std::string good = encode_sample_block(samples);
  struct Case {
    std::string data;
    size_t count;
    const char* expected;
  };
  for (const Case& c : {Case{"", 2, "bad block header"}, Case{"\xff\xff", 2, "bad block header"},
                        Case{good.substr(0, good.size() - 3), 2, "corrupt compressed samples"},
                        Case{good, 1, "samples do not fill the block"}, Case{good, 3, "bad block header"},
                        Case{std::string(1, '\x05') + "garbage", 1, "corrupt compressed samples"}}) {
    std::vector<Sample> out(1);
    EXPECT_EQ(decode_sample_block(c.data, c.count, kStacks, out), c.expected) << c.count;
    EXPECT_EQ(out.size(), 1u);
  }
}

TEST(SampleBlock, AStackPastTheRunsIsNamed) {
  std::vector<Sample> samples = {{10, 1, 1, 2, ThreadState::kRunning, true}, {20, 1, 1, 7, ThreadState::kIdle, false}};
  std::vector<Sample> out;
  EXPECT_EQ(decode_sample_block(encode_sample_block(samples), 2, 7, out), "stack 7 does not exist");
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(decode_sample_block(encode_sample_block(samples), 2, 8, out), "");
}

TEST(SampleBlock, AnUnknownStateIsNamed) {
  std::vector<Sample> samples = {{10, 1, 1, 2, static_cast<ThreadState>(9), false}};
  std::vector<Sample> out;
  EXPECT_EQ(decode_sample_block(encode_sample_block(samples), 1, kStacks, out), "unknown thread state 9");
  EXPECT_TRUE(out.empty());
}

// The columns hold 64-bit ids; a Sample 32-bit ones (Linux's): a larger one
// is named, not cut.
TEST(SampleBlock, AnIdPast32BitsIsRefused) {
  for (uint64_t pid : {uint64_t{1} << 31, uint64_t{1} << 40}) {
    ColumnWriter columns(16);
    columns.varint(zigzag(10));   // time
    columns.varint(zigzag(pid));  // pid
    columns.varint(zigzag(0));    // tid less pid
    columns.varint(zigzag(2));    // stack
    columns.byte(static_cast<uint8_t>(ThreadState::kRunning));
    std::vector<Sample> out;
    EXPECT_EQ(decode_sample_block(columns.compressed(), 1, kStacks, out), "a process or thread id out of range") << pid;
    EXPECT_TRUE(out.empty());
  }
}

}  // namespace
}  // namespace stepscope
