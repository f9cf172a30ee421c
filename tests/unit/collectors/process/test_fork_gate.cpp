#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

#include "collectors/process/fork_gate.hpp"
#include "collectors/process/proc_files.hpp"

namespace stepscope {
namespace {

TEST(ForkGate, ParsesTheTaskCountAndTheLastPid) {
  auto counters = parse_loadavg_pids("12.25 10.57 6.87 14/149 9224\n");
  ASSERT_TRUE(counters);
  EXPECT_EQ(counters->tasks, 149u);
  EXPECT_EQ(counters->last_pid, 9224);
  EXPECT_FALSE(parse_loadavg_pids(""));
  EXPECT_FALSE(parse_loadavg_pids("12.25 10.57 6.87 14/149"));       // truncated
  EXPECT_FALSE(parse_loadavg_pids("12.25 10.57 6.87 14-149 9224\n"));
  EXPECT_FALSE(parse_loadavg_pids("12.25 10.57 6.87 14/149 92x4\n"));
  EXPECT_FALSE(parse_loadavg_pids("12.25 10.57 6.87 /149 9224\n"));
  EXPECT_FALSE(parse_loadavg_pids("12.25 10.57 6.87 14/149 9224 7\n"));
}

// Walks at the first read, at a change and at the read after it, whenever
// the file cannot be read, and at least once every max_skipped + 1 reads.
TEST(ForkGate, SkipsOnlyWhileTheCountersStandStill) {
  ForkGate gate(/*max_skipped=*/3, "/nonexistent");
  const PidCounters a{100, 500}, b{101, 501};
  EXPECT_TRUE(gate.must_walk(a));   // the first read
  EXPECT_TRUE(gate.must_walk(a));   // the read after a change
  EXPECT_FALSE(gate.must_walk(a));
  EXPECT_FALSE(gate.must_walk(a));
  EXPECT_FALSE(gate.must_walk(a));
  EXPECT_TRUE(gate.must_walk(a));   // three skipped: the backstop
  EXPECT_FALSE(gate.must_walk(a));
  EXPECT_TRUE(gate.must_walk(b));   // a new pid
  EXPECT_TRUE(gate.must_walk(b));
  EXPECT_FALSE(gate.must_walk(b));
  EXPECT_TRUE(gate.must_walk(PidCounters{101, 502}));  // a pid, however few tasks
  EXPECT_TRUE(gate.must_walk(PidCounters{101, 502}));
  EXPECT_TRUE(gate.must_walk(PidCounters{100, 502}));  // a task reaped, or linked
  EXPECT_TRUE(gate.must_walk(PidCounters{100, 502}));
  EXPECT_TRUE(gate.must_walk(std::nullopt));            // unreadable
  EXPECT_TRUE(gate.must_walk(PidCounters{100, 502}));   // and back: a change
  EXPECT_TRUE(gate.must_walk(PidCounters{100, 502}));
  EXPECT_FALSE(gate.must_walk(PidCounters{100, 502}));
  EXPECT_EQ(gate.skipped(), 6u);
  EXPECT_TRUE(ForkGate(3, "/nonexistent").must_walk());  // no file: always walk
}

// The kernel's side of the bargain: a new process and a new thread each
// move the last pid this process's namespace allocated.
TEST(ForkGate, NewProcessesAndThreadsMoveTheLastPid) {
  auto read_counters = [] {
    auto text = read_proc_file("/proc/loadavg");
    return text ? parse_loadavg_pids(*text) : std::nullopt;
  };
  auto before = read_counters();
  ASSERT_TRUE(before) << "cannot read /proc/loadavg";
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  auto after_fork = read_counters();
  ::waitpid(child, nullptr, 0);
  ASSERT_TRUE(after_fork);
  EXPECT_NE(after_fork->last_pid, before->last_pid);
  pid_t thread_id = 0;
  std::thread thread([&] { thread_id = ::gettid(); });
  thread.join();
  auto after_thread = read_counters();
  ASSERT_TRUE(after_thread);
  EXPECT_NE(after_thread->last_pid, after_fork->last_pid);
  // Other processes of the machine may have taken pids since: the last pid
  // is ours or later (modulo the wrap at pid_max).
  EXPECT_TRUE(after_thread->last_pid >= thread_id || after_thread->last_pid < before->last_pid);
}

}  // namespace
}  // namespace stepscope
