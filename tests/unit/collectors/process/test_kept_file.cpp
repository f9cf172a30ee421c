// KeptFile: a file opened once and re-read with pread sees the file's
// current text each time, however long, and a file that appears later.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "collectors/process/kept_file.hpp"

namespace stepscope {
namespace {

class KeptFileTest : public testing::Test {
 protected:
  void SetUp() override {
    path_ = std::filesystem::temp_directory_path() / ("stepscope-kept-" + std::to_string(::getpid()));
  }
  void TearDown() override { std::filesystem::remove(path_); }
  // Rewrites the file in place (same inode), as the kernel's files change.
  void write(const std::string& text) { std::ofstream(path_, std::ios::trunc) << text; }
  std::filesystem::path path_;
};

TEST_F(KeptFileTest, ReadsTheCurrentTextEachTime) {
  KeptFile file(path_.string());
  EXPECT_FALSE(file.read()) << "absent";
  write("first\n");
  EXPECT_EQ(file.read(), "first\n") << "opened once it exists";
  EXPECT_TRUE(file.is_open());
  write("second, longer\n");
  EXPECT_EQ(file.read(), "second, longer\n");
  write("3\n");
  EXPECT_EQ(file.read(), "3\n") << "shorter: nothing of the longer text is left";
  const std::string big(10000, 'x');  // past the first buffer's 4096 bytes
  write(big);
  EXPECT_EQ(file.read(), big);
  write("");
  EXPECT_EQ(file.read(), "");
}

// A file read as formatted whole stops at the first short read, and still
// reads past a full buffer: the same texts as the record-by-record reading.
TEST_F(KeptFileTest, WholeShapeReadsTheSameTexts) {
  KeptFile whole(path_.string(), KeptFile::Shape::kWhole);
  write("first\n");
  EXPECT_EQ(whole.read(), "first\n");
  const std::string big(3 * 4096 + 7, 'y');  // fills the buffer twice over
  write(big);
  EXPECT_EQ(whole.read(), big);
  write("");
  EXPECT_EQ(whole.read(), "");
  // A /proc file formatted by one call, as read both ways.
  KeptFile cgroup_whole("/proc/self/cgroup", KeptFile::Shape::kWhole);
  KeptFile cgroup_records("/proc/self/cgroup");
  auto a = cgroup_whole.read();
  ASSERT_TRUE(a);
  EXPECT_FALSE(a->empty());
  EXPECT_EQ(std::string(*a), std::string(cgroup_records.read().value_or("")));
}

TEST_F(KeptFileTest, ProcFilesReadWholeAndMoved) {
  KeptFile stat("/proc/self/stat");
  auto text = stat.read();
  ASSERT_TRUE(text);
  EXPECT_TRUE(text->starts_with(std::to_string(::getpid()) + " ("));
  EXPECT_EQ(text->back(), '\n');
  KeptFile moved = std::move(stat);
  EXPECT_FALSE(stat.is_open());  // NOLINT(bugprone-use-after-move): the moved-from state is the point
  EXPECT_TRUE(moved.read());
  // /proc/self/maps is listed record by record, a page per read at most.
  KeptFile maps("/proc/self/maps");
  auto lines = maps.read();
  ASSERT_TRUE(lines);
  EXPECT_NE(lines->find("[stack]"), std::string_view::npos) << "the whole file, to its last lines";
  EXPECT_EQ(lines->size(), lines->find_last_of('\n') + 1);
}

}  // namespace
}  // namespace stepscope
