// The memory cgroup reader: mounts, the cgroup's directory, limits and the
// working set, from fixtures of the files of v1, v2 and hybrid machines.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "collectors/sysmon/cgroup_memory.hpp"

namespace {

using stepscope::CgroupMount;

// A hybrid machine (v1 controllers, v2 unified), and a v2-only container
// whose mount's root is its own cgroup (a cgroup namespace-less view).
constexpr const char* kHybridMountinfo =
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
constexpr const char* kHybridCgroup =
    "9:name=systemd:/\n4:memory:/process_api/abc\n1:cpu,cpuacct:/\n0::/user.slice\n";

TEST(CgroupMemory, FindsTheMemoryHierarchies) {
  auto mounts = stepscope::parse_cgroup_mounts(kHybridMountinfo);
  ASSERT_EQ(mounts.size(), 2u);
  EXPECT_EQ(mounts[0].version, 1);
  EXPECT_EQ(mounts[0].mount_point, "/sys/fs/cgroup/memory");
  EXPECT_EQ(mounts[1].version, 2);
  EXPECT_EQ(mounts[1].mount_point, "/sys/fs/cgroup/unified");
  // Escaped blanks in the mount point; a truncated line is skipped.
  auto odd = stepscope::parse_cgroup_mounts("50 1 0:40 /job /mnt/cg\\040two rw - cgroup2 cgroup2 rw\n51 1 0:41 / /x rw");
  ASSERT_EQ(odd.size(), 1u);
  EXPECT_EQ(odd[0].mount_point, "/mnt/cg two");
  EXPECT_EQ(odd[0].root, "/job");
}

TEST(CgroupMemory, PrefersTheV1MemoryHierarchyOnAHybridMachine) {
  auto dir = stepscope::memory_cgroup_dir(kHybridCgroup, stepscope::parse_cgroup_mounts(kHybridMountinfo));
  ASSERT_TRUE(dir);
  EXPECT_EQ(dir->version, 1);
  EXPECT_EQ(dir->path, "/sys/fs/cgroup/memory/process_api/abc");
  EXPECT_EQ(dir->mount_point, "/sys/fs/cgroup/memory");
}

TEST(CgroupMemory, V2PathsAreRelativeToTheMountsRoot) {
  std::vector<CgroupMount> mounts = {{2, "/kubepods/pod1", "/sys/fs/cgroup"}};
  auto dir = stepscope::memory_cgroup_dir("0::/kubepods/pod1/ctr\n", mounts);
  ASSERT_TRUE(dir);
  EXPECT_EQ(dir->version, 2);
  EXPECT_EQ(dir->path, "/sys/fs/cgroup/ctr");
  auto root = stepscope::memory_cgroup_dir("0::/kubepods/pod1\n", mounts);
  ASSERT_TRUE(root);
  EXPECT_EQ(root->path, "/sys/fs/cgroup");
  // Outside the mount (/kubepods/pod10 is not below /kubepods/pod1): unknown.
  EXPECT_FALSE(stepscope::memory_cgroup_dir("0::/kubepods/pod10\n", mounts));
  EXPECT_FALSE(stepscope::memory_cgroup_dir("garbage", mounts));
}

TEST(CgroupMemory, LimitsAndStatFields) {
  EXPECT_EQ(stepscope::parse_cgroup_limit("536870912\n"), 536870912u);
  EXPECT_FALSE(stepscope::parse_cgroup_limit("max\n"));
  EXPECT_FALSE(stepscope::parse_cgroup_limit("9223372036854771712\n"));  // v1's unlimited
  EXPECT_FALSE(stepscope::parse_cgroup_limit("12ab"));
  EXPECT_FALSE(stepscope::parse_cgroup_limit(""));
  const char* stat = "cache 100\ninactive_file 4096\ntotal_inactive_file 8192\n";
  EXPECT_EQ(stepscope::memory_stat_field(stat, "inactive_file"), 4096u);
  EXPECT_EQ(stepscope::memory_stat_field(stat, "total_inactive_file"), 8192u);
  EXPECT_FALSE(stepscope::memory_stat_field(stat, "active_file"));
}

class CgroupFiles : public testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() / ("stepscope-cgroup-" + std::to_string(::getpid()));
    std::filesystem::create_directories(root_ / "job" / "step");
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  void write(const std::string& path, const std::string& text) { std::ofstream(root_ / path) << text; }
  std::filesystem::path root_;
};

TEST_F(CgroupFiles, V2TakesTheLeastLimitOfTheAncestors) {
  write("job/memory.max", "1073741824\n");
  write("job/step/memory.max", "max\n");
  write("job/step/memory.current", "900000000\n");
  write("job/step/memory.stat", "anon 800000000\nfile 100000000\ninactive_file 60000000\n");
  auto m = stepscope::read_cgroup_memory({2, (root_ / "job/step").string(), root_.string()});
  ASSERT_TRUE(m);
  EXPECT_EQ(m->limit_bytes, 1073741824u);
  EXPECT_EQ(m->usage_bytes, 900000000u);
  EXPECT_EQ(m->working_set_bytes, 840000000u);
}

TEST_F(CgroupFiles, KeptFilesSeeNewValues) {
  write("job/memory.max", "1073741824\n");
  write("job/step/memory.max", "max\n");
  write("job/step/memory.current", "900000000\n");
  write("job/step/memory.stat", "inactive_file 60000000\n");
  stepscope::CgroupMemoryFiles files({2, (root_ / "job/step").string(), root_.string()});
  ASSERT_TRUE(files.read());
  write("job/step/memory.max", "536870912\n");  // docker update --memory
  write("job/step/memory.current", "500000000\n");
  write("job/step/memory.stat", "inactive_file 100000000\n");
  auto m = files.read();
  ASSERT_TRUE(m);
  EXPECT_EQ(m->limit_bytes, 536870912u);
  EXPECT_EQ(m->usage_bytes, 500000000u);
  EXPECT_EQ(m->working_set_bytes, 400000000u);
}

// `record` reads the limits only at its once-a-second membership checks:
// between them the last limit read is given with each new usage.
TEST_F(CgroupFiles, LimitsAreReadAgainOnlyWhenAsked) {
  write("job/memory.max", "1073741824\n");
  write("job/step/memory.max", "max\n");
  write("job/step/memory.current", "900000000\n");
  write("job/step/memory.stat", "inactive_file 60000000\n");
  stepscope::CgroupMemoryFiles files({2, (root_ / "job/step").string(), root_.string()});
  auto first = files.read(false);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->limit_bytes, 1073741824u) << "the first read reads the limits however asked";
  write("job/step/memory.max", "536870912\n");
  write("job/step/memory.current", "500000000\n");
  auto between = files.read(false);
  ASSERT_TRUE(between);
  EXPECT_EQ(between->limit_bytes, 1073741824u);
  EXPECT_EQ(between->usage_bytes, 500000000u);
  auto checked = files.read(true);
  ASSERT_TRUE(checked);
  EXPECT_EQ(checked->limit_bytes, 536870912u);
}

TEST_F(CgroupFiles, V1ReadsTheHierarchicalLimit) {
  write("job/memory.usage_in_bytes", "600000000\n");
  write("job/memory.limit_in_bytes", "9223372036854771712\n");
  write("job/memory.stat", "inactive_file 1\nhierarchical_memory_limit 536870912\ntotal_inactive_file 100000000\n");
  auto m = stepscope::read_cgroup_memory({1, (root_ / "job").string(), root_.string()});
  ASSERT_TRUE(m);
  EXPECT_EQ(m->limit_bytes, 536870912u);
  EXPECT_EQ(m->working_set_bytes, 500000000u);
  // Unlimited all the way up, and a cgroup without its usage file.
  write("job/memory.stat", "hierarchical_memory_limit 9223372036854771712\n");
  m = stepscope::read_cgroup_memory({1, (root_ / "job").string(), root_.string()});
  ASSERT_TRUE(m);
  EXPECT_FALSE(m->limit_bytes);
  EXPECT_EQ(m->working_set_bytes, 600000000u);
  EXPECT_FALSE(stepscope::read_cgroup_memory({1, (root_ / "job/step").string(), root_.string()}));
}

}  // namespace
