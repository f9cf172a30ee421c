// UniqueFd: every descriptor it held is closed exactly when it is dropped,
// overwritten or reset, and never twice.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "util/unique_fd.hpp"

namespace stepscope {
namespace {

bool is_open(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

TEST(UniqueFd, ClosesWhenDroppedOverwrittenOrReset) {
  int first = -1, second = -1;
  {
    UniqueFd a = UniqueFd::open_read_only("/proc/self/stat");
    ASSERT_TRUE(a.valid());
    first = a.get();
    EXPECT_NE(::fcntl(first, F_GETFD) & FD_CLOEXEC, 0) << "close-on-exec";
    UniqueFd b = std::move(a);
    EXPECT_FALSE(a.valid());  // NOLINT(bugprone-use-after-move): the moved-from state is the point
    EXPECT_EQ(b.get(), first);
    EXPECT_TRUE(is_open(first)) << "a move closes nothing";
    UniqueFd c = UniqueFd::open_read_only("/proc/self/status");
    second = c.get();
    b = std::move(c);
    EXPECT_FALSE(is_open(first)) << "the overwritten descriptor is closed";
    EXPECT_EQ(b.get(), second);
    EXPECT_TRUE(is_open(second));
  }
  EXPECT_FALSE(is_open(second)) << "closed when dropped";
  UniqueFd d = UniqueFd::open_read_only("/proc/self/stat");
  const int third = d.get();
  d.reset();
  EXPECT_FALSE(d.valid());
  EXPECT_FALSE(is_open(third));
}

TEST(UniqueFd, FailedOpenIsInvalidWithErrno) {
  UniqueFd missing = UniqueFd::open_read_only("/proc/self/no-such-file");
  EXPECT_FALSE(missing.valid());
  EXPECT_EQ(errno, ENOENT);
  UniqueFd not_a_folder = UniqueFd::open_read_only("/proc/self/stat", O_DIRECTORY);
  EXPECT_FALSE(not_a_folder.valid());
  EXPECT_EQ(errno, ENOTDIR);
}

}  // namespace
}  // namespace stepscope
