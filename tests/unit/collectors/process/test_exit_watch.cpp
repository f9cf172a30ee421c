#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <thread>
#include <vector>

#include "collectors/process/exit_watch.hpp"
#include "collectors/process/proc_threads.hpp"

namespace stepscope {
namespace {

// A child that waits for its pipe to close, then exits with `status` (or,
// with status < 0, kills itself with -status).
struct Child {
  pid_t pid = -1;
  int release_fd = -1;
  uint64_t start_ticks = 0;

  explicit Child(int status) {
    int fds[2];
    if (pipe(fds) != 0) return;
    pid = fork();
    if (pid == 0) {
      close(fds[1]);
      char byte;
      while (read(fds[0], &byte, 1) > 0) {
      }
      if (status < 0) kill(getpid(), -status);
      _exit(status);
    }
    close(fds[0]);
    release_fd = fds[1];
    if (auto stat = read_proc_stat(pid)) start_ticks = stat->start_ticks;
  }
  void release() {
    if (release_fd >= 0) close(release_fd);
    release_fd = -1;
  }
  // Blocks until the child is a zombie, without reaping it.
  void wait_for_zombie() const {
    siginfo_t info{};
    waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT);
  }
  void reap() const { waitpid(pid, nullptr, 0); }
};

// Asks until the watch has read the zombie (the child stays unreaped, so it
// will), for at most 30 s on the slowest machine.
std::optional<int> status_once_read(ExitWatch& watch, const Child& child) {
  for (int i = 0; i < 30'000; ++i) {
    if (auto status = watch.take_exit_status(child.pid, child.start_ticks)) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return std::nullopt;
}

TEST(ExitWatch, ReadsTheStatusOfEachProcessThatExits) {
  std::vector<Child> children;
  for (int status : {0, 7, -SIGKILL, -SIGTERM}) children.emplace_back(status);
  ExitWatch watch;
  for (const Child& child : children) {
    ASSERT_GT(child.pid, 0);
    ASSERT_GT(child.start_ticks, 0u);
    watch.watch(child.pid, child.start_ticks);
    EXPECT_FALSE(watch.take_exit_status(child.pid, child.start_ticks));  // alive
  }
  for (Child& child : children) child.release();
  std::vector<std::optional<int>> statuses;
  for (const Child& child : children) {
    child.wait_for_zombie();
    statuses.push_back(status_once_read(watch, child));
    child.reap();
  }
  EXPECT_EQ(statuses[0], 0);
  EXPECT_EQ(statuses[1], 7);
  EXPECT_EQ(statuses[2], 128 + SIGKILL);  // as a shell reports it
  EXPECT_EQ(statuses[3], 128 + SIGTERM);
  // Handed out once.
  EXPECT_FALSE(watch.take_exit_status(children[1].pid, children[1].start_ticks));
}

// The status belongs to the process that started at start_ticks: a later
// one with the same pid is not it. Each round asks as the wrong process
// first, so once the status is there (read during a round's sleep, almost
// always) the wrong identity is asked for it before the right one takes it.
TEST(ExitWatch, KeepsTheStatusFromAnotherProcessWithThePid) {
  Child child(3);
  ASSERT_GT(child.pid, 0);
  ExitWatch watch;
  watch.watch(child.pid, child.start_ticks);
  child.release();
  child.wait_for_zombie();
  std::optional<int> status;
  for (int i = 0; i < 30'000 && !status; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ASSERT_FALSE(watch.take_exit_status(child.pid, child.start_ticks + 1));
    status = watch.take_exit_status(child.pid, child.start_ticks);
  }
  EXPECT_EQ(status, 3);
  child.reap();
}

// Processes that are gone before they are watched, or never were, and a
// watch that ends while the processes it watches live on: nothing hangs.
TEST(ExitWatch, HandlesProcessesGoneOrStillAlive) {
  Child gone(5);
  ASSERT_GT(gone.pid, 0);
  gone.release();
  gone.reap();
  Child alive(0);
  ASSERT_GT(alive.pid, 0);
  {
    ExitWatch watch;
    watch.watch(gone.pid, gone.start_ticks);
    watch.watch(-1, 0);
    watch.watch(alive.pid, alive.start_ticks);
    EXPECT_FALSE(watch.take_exit_status(gone.pid, gone.start_ticks));
    EXPECT_FALSE(watch.take_exit_status(alive.pid, alive.start_ticks));
  }
  alive.release();
  alive.reap();
}

}  // namespace
}  // namespace stepscope
