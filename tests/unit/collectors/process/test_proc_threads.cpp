#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include "collectors/process/proc_threads.hpp"

namespace stepscope {
namespace {

// A stat line as Linux 6.x writes it, for a process whose name is hostile.
const char* kStat =
    "4242 (we ird) (x) 1) S 4200 4242 4200 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 3 0 "
    "987654 10000000 500 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 "
    "0 0 0 256\n";

TEST(ProcStat, FieldsCountFromTheLastParenthesis) {
  auto stat = parse_proc_stat(kStat);
  ASSERT_TRUE(stat);
  EXPECT_EQ(stat->state, 'S');
  EXPECT_EQ(stat->parent_pid, 4200);
  EXPECT_EQ(stat->start_ticks, 987654u);
  EXPECT_EQ(stat->exit_code, 256);
  EXPECT_EQ(stat->start_stack, 0u) << "hidden from those who may not read the process";
  EXPECT_EQ(stat->start_code, 1u);  // the kernel's 1 for hidden, as written above
  EXPECT_EQ(stat->end_code, 1u);
}

TEST(ProcStat, TruncatedOrGarbageIsRejected) {
  EXPECT_FALSE(parse_proc_stat(""));
  EXPECT_FALSE(parse_proc_stat("12 (x) S 1 2"));
  EXPECT_FALSE(parse_proc_stat("no parenthesis at all"));
}

TEST(ProcStat, ReadsThisProcess) {
  auto stat = read_proc_stat(getpid());
  ASSERT_TRUE(stat);
  EXPECT_EQ(stat->state, 'R');
  EXPECT_EQ(stat->parent_pid, getppid());
  int on_our_stack = 0;
  EXPECT_GT(stat->start_stack, reinterpret_cast<uint64_t>(&on_our_stack) - (64 << 20));
  // This function's code lies in the program's text.
  const auto code = reinterpret_cast<uint64_t>(&parse_proc_stat);
  EXPECT_LE(stat->start_code, code);
  EXPECT_GT(stat->end_code, code);
  EXPECT_FALSE(read_proc_stat(-5));
}

TEST(ProcThreads, ListsThreadsWithNamesAndStates) {
  std::atomic<bool> named{false}, stop{false};
  std::thread sleeper([&] {
    prctl(PR_SET_NAME, "ss-sleeper");
    named = true;
    while (!stop) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  });
  while (!named) std::this_thread::yield();
  bool found = false;
  for (const ProcThread& t : read_proc_threads(getpid())) {
    if (t.name == "ss-sleeper") {
      found = true;
      EXPECT_NE(t.tid, getpid());
    }
    if (t.tid == gettid()) {
      EXPECT_EQ(t.state, 'R');
    }
  }
  stop = true;
  sleeper.join();
  EXPECT_TRUE(found);
  EXPECT_EQ(read_thread_state(getpid(), gettid()), 'R');
}

TEST(ProcThreads, StateLettersMapToRunStates) {
  EXPECT_EQ(thread_state_from_letter('R'), ThreadState::kRunning);
  EXPECT_EQ(thread_state_from_letter('D'), ThreadState::kDiskWait);
  EXPECT_EQ(thread_state_from_letter('S'), ThreadState::kIdle);
  EXPECT_EQ(thread_state_from_letter('T'), ThreadState::kIdle);
}

TEST(ProcThreads, CommandLineJoinsArguments) {
  auto cmd = read_command_line(getpid());
  ASSERT_TRUE(cmd);
  EXPECT_NE(cmd->find("unit_tests"), std::string::npos);
  EXPECT_FALSE(read_command_line(-5));
}

}  // namespace
}  // namespace stepscope
