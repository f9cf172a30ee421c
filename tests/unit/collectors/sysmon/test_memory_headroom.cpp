#include <gtest/gtest.h>

#include "collectors/sysmon/memory_headroom.hpp"

namespace stepscope {
namespace {

constexpr uint64_t kMiB = 1 << 20;

TEST(MemoryHeadroom, TheLeastBoundWinsAndSaysWhatItIs) {
  MemoryBounds bounds;
  EXPECT_FALSE(least_headroom(bounds)) << "nothing known, nothing claimed";
  bounds.available = 8000 * kMiB;
  EXPECT_EQ(least_headroom(bounds)->bytes, 8000 * kMiB);
  bounds.cgroup_limit = 4000 * kMiB;  // a container's limit, 1500 MiB of it in use
  bounds.cgroup_working_set = 1500 * kMiB;
  std::optional<MemoryHeadroom> least = least_headroom(bounds);
  EXPECT_EQ(least->bytes, 2500 * kMiB);
  EXPECT_EQ(least->bound, "the memory cgroup's limit");
  bounds.data_limit = 1000 * kMiB;  // ulimit -d
  bounds.data_used = 10 * kMiB;
  least = least_headroom(bounds);
  EXPECT_EQ(least->bytes, 990 * kMiB);
  EXPECT_EQ(least->bound, "the data-segment limit (ulimit -d)");
}

// `ulimit -d` counts thread stacks: those to come are set aside, but never
// more than half of what the limit leaves.
TEST(MemoryHeadroom, TheDataLimitKeepsRoomForThreadsStacks) {
  MemoryBounds bounds;
  bounds.data_limit = 1000 * kMiB;
  bounds.data_used = 100 * kMiB;
  bounds.data_for_threads = 48 * kMiB;
  EXPECT_EQ(least_headroom(bounds)->bytes, 852 * kMiB);
  bounds.data_limit = 160 * kMiB;
  EXPECT_EQ(least_headroom(bounds)->bytes, 30 * kMiB) << "half of the 60 MiB left";
}

TEST(MemoryHeadroom, ALimitAlreadyPassedLeavesNothing) {
  MemoryBounds bounds;
  bounds.cgroup_limit = 100 * kMiB;
  bounds.cgroup_working_set = 120 * kMiB;
  EXPECT_EQ(least_headroom(bounds)->bytes, 0u);
}

TEST(MemoryHeadroom, ThisProcessHasSomeMemoryLeft) {
  std::optional<MemoryHeadroom> headroom = least_headroom(read_memory_bounds());
  ASSERT_TRUE(headroom) << "/proc/meminfo is readable on Linux";
  EXPECT_GT(headroom->bytes, 0u);
}

}  // namespace
}  // namespace stepscope
