// The sampler's looks at a process's threads, against threads of this test
// process: which answers let the stack reader keep a stack unread.
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "collectors/process/thread_looks.hpp"

namespace stepscope {
namespace {

// A thread asleep on a pipe until the test ends.
class SleepingThread {
 public:
  SleepingThread() {
    EXPECT_EQ(::pipe(wake_), 0);
    thread_ = std::thread([this] {
      tid_ = static_cast<int64_t>(::syscall(SYS_gettid));
      char byte;
      (void)::read(wake_[0], &byte, 1);
    });
    while (tid_ == 0) std::this_thread::yield();
    // Asleep, and switched out, once a look finds it still.
    ThreadStateReader reader;
    for (int i = 0; i < 2000; ++i) {
      auto look = reader.look(::getpid(), tid_);
      if (look && look->still) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  ~SleepingThread() {
    (void)::write(wake_[1], "x", 1);
    thread_.join();
    ::close(wake_[0]);
    ::close(wake_[1]);
  }
  int64_t tid() const { return tid_; }

 private:
  int wake_[2] = {-1, -1};
  std::atomic<int64_t> tid_{0};
  std::thread thread_;
};

// The first round knows nothing of the thread: it is looked at after the
// read. The second looks before the read, but the thread may have run
// between the first read and the first look. From the third on, looked at
// before each read and still since the last, it keeps its stack.
TEST(ThreadLooks, AThreadLookedAtBeforeEachReadAndStillKeepsItsStack) {
  SleepingThread sleeper;
  ThreadStateReader states;
  ThreadLooks looks(states, ::getpid());
  looks.begin_round();
  EXPECT_TRUE(looks.may_have_run(sleeper.tid())) << "no look before the last read";
  EXPECT_EQ(looks.state(sleeper.tid()), 'S');
  looks.begin_round();
  EXPECT_TRUE(looks.may_have_run(sleeper.tid())) << "the last look came after the last read";
  EXPECT_EQ(looks.state(sleeper.tid()), 'S') << "the look before the read serves the sample";
  for (int round = 3; round <= 5; ++round) {
    looks.begin_round();
    EXPECT_FALSE(looks.may_have_run(sleeper.tid())) << "round " << round;
    EXPECT_EQ(looks.state(sleeper.tid()), 'S');
  }
}

TEST(ThreadLooks, RunningAndGoneThreadsMayHaveRun) {
  ThreadStateReader states;
  ThreadLooks looks(states, ::getpid());
  const auto self = static_cast<int64_t>(::syscall(SYS_gettid));
  for (int round = 0; round < 3; ++round) {
    looks.begin_round();
    EXPECT_TRUE(looks.may_have_run(self)) << "this thread, running: looked at after the read";
    EXPECT_EQ(looks.state(self), 'R');
  }
  int64_t gone = 0;
  std::thread([&] { gone = static_cast<int64_t>(::syscall(SYS_gettid)); }).join();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  looks.begin_round();
  EXPECT_TRUE(looks.may_have_run(gone));
  EXPECT_EQ(looks.state(gone), std::nullopt);
}

}  // namespace
}  // namespace stepscope
