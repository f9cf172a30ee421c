// The thread-state reader against threads of this test process: a thread
// asleep on a pipe, the same thread spinning, and after it has exited.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include "collectors/process/thread_state_reader.hpp"

namespace stepscope {
namespace {

TEST(ThreadStateReader, ParsesSchedstat) {
  auto c = parse_schedstat("1234567 89 12\n");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->on_cpu_ns, 1234567u);
  EXPECT_EQ(c->waiting_ns, 89u);
  EXPECT_EQ(c->scheduled, 12u);
  EXPECT_FALSE(parse_schedstat("0 0 0\n")) << "a kernel without scheduler statistics";
  EXPECT_FALSE(parse_schedstat("12 34"));
  EXPECT_FALSE(parse_schedstat("x 1 2"));
  EXPECT_FALSE(parse_schedstat(""));
}

// The state letter a look at `tid` (a thread of this process) finds.
std::optional<char> state_of(ThreadStateReader& reader, int64_t tid) {
  auto look = reader.look(::getpid(), tid);
  if (!look) return std::nullopt;
  return look->state;
}

// Calls `read` every millisecond, for up to 2 s, until `done` accepts what
// it returned (threads take a moment to get where they are told to go); the
// last value read.
template <class Read, class Done>
auto read_until(Read read, Done done) {
  auto value = read();
  for (int i = 0; i < 2000 && !done(value); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    value = read();
  }
  return value;
}

// Reads `tid`'s state until it is `wanted`; the last state read.
std::optional<char> wait_for_state(ThreadStateReader& reader, int64_t tid, char wanted) {
  return read_until([&] { return state_of(reader, tid); }, [&](auto state) { return state == wanted; });
}

TEST(ThreadStateReader, SleepingRunningAndGone) {
  int wake[2];
  ASSERT_EQ(::pipe(wake), 0);
  std::atomic<int64_t> tid{0};
  std::atomic<bool> stop{false};
  std::thread thread([&] {
    tid = static_cast<int64_t>(::syscall(SYS_gettid));
    char byte;
    if (::read(wake[0], &byte, 1) != 1) return;  // asleep until woken
    while (!stop) {
    }  // then running
  });
  while (tid == 0) std::this_thread::yield();
  ThreadStateReader reader;
  EXPECT_EQ(wait_for_state(reader, tid, 'S'), 'S');
  // Asleep, its scheduler counters stand still: stat need not be read again.
  const uint64_t stat_reads = reader.stat_reads();
  for (int i = 0; i < 5; ++i) EXPECT_EQ(state_of(reader, tid), 'S');
  EXPECT_EQ(reader.stat_reads(), stat_reads);
  // Woken, it runs: its counters move and stat tells.
  ASSERT_EQ(::write(wake[1], "x", 1), 1);
  EXPECT_EQ(wait_for_state(reader, tid, 'R'), 'R');
  EXPECT_GT(reader.stat_reads(), stat_reads);
  stop = true;
  thread.join();
  // join() returns while the thread may still be finishing its exit in the
  // kernel (running, and so shown running); then it is gone.
  std::optional<char> state = 'R';
  for (int i = 0; i < 2000 && state; ++i) {
    state = state_of(reader, tid);
    if (state) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(state, std::nullopt) << "an exited thread";
  ::close(wake[0]);
  ::close(wake[1]);
}

// A running thread is told running from its `syscall` file; once it stops,
// the reader must see it asleep at once and go back to the schedstat shortcut.
TEST(ThreadStateReader, RunningThenAsleepThenRunningAgain) {
  int wake[2];
  ASSERT_EQ(::pipe(wake), 0);
  std::atomic<int64_t> tid{0};
  std::atomic<int> phase{0};  // 0: spin, 1: sleep on the pipe, then spin until 2
  std::thread thread([&] {
    tid = static_cast<int64_t>(::syscall(SYS_gettid));
    while (phase == 0) {
    }
    char byte;
    if (::read(wake[0], &byte, 1) != 1) return;
    while (phase != 2) {
    }
  });
  while (tid == 0) std::this_thread::yield();
  ThreadStateReader reader;
  EXPECT_EQ(wait_for_state(reader, tid, 'R'), 'R');
  // Still running: /proc/.../syscall says so, stat is not read.
  uint64_t stat_reads = reader.stat_reads();
  for (int i = 0; i < 5; ++i) EXPECT_EQ(state_of(reader, tid), 'R');
  EXPECT_EQ(reader.stat_reads(), stat_reads);
  phase = 1;
  EXPECT_EQ(wait_for_state(reader, tid, 'S'), 'S');
  // Asleep on the pipe: the shortcut holds again, stat is not read.
  stat_reads = reader.stat_reads();
  for (int i = 0; i < 5; ++i) EXPECT_EQ(state_of(reader, tid), 'S');
  EXPECT_EQ(reader.stat_reads(), stat_reads);
  ASSERT_EQ(::write(wake[1], "x", 1), 1);
  EXPECT_EQ(wait_for_state(reader, tid, 'R'), 'R');
  phase = 2;
  thread.join();
  ::close(wake[0]);
  ::close(wake[1]);
}

// Looks at `tid` until one finds it still (a thread that just blocked is
// shown asleep a moment before the kernel has switched it out, which moves
// its counters once more); whether one did.
bool wait_until_still(ThreadStateReader& reader, int64_t tid) {
  auto look = read_until([&] { return reader.look(::getpid(), tid); },
                         [](const auto& found) { return found && found->still; });
  return look && look->still;
}

// A thread asleep stays still from one look to the next; once it has run
// (woken, it reads a byte and sleeps again), the next look says it is not.
TEST(ThreadStateReader, LooksTellAThreadThatHasNotRunSince) {
  int wake[2];
  ASSERT_EQ(::pipe(wake), 0);
  std::atomic<int64_t> tid{0};
  std::atomic<int> woken{0};
  std::thread thread([&] {
    tid = static_cast<int64_t>(::syscall(SYS_gettid));
    char byte;
    while (::read(wake[0], &byte, 1) == 1 && byte == 'x') ++woken;
  });
  while (tid == 0) std::this_thread::yield();
  ThreadStateReader reader;
  for (int round = 1; round <= 3; ++round) {
    ASSERT_TRUE(wait_until_still(reader, tid));
    auto look = reader.look(::getpid(), tid);
    ASSERT_TRUE(look.has_value());
    EXPECT_EQ(look->state, 'S');
    EXPECT_TRUE(look->still);
    ASSERT_EQ(::write(wake[1], "x", 1), 1);
    while (woken < round) std::this_thread::yield();
    look = reader.look(::getpid(), tid);
    ASSERT_TRUE(look.has_value());
    EXPECT_FALSE(look->still) << "it ran since the last look";
  }
  ASSERT_EQ(::write(wake[1], "q", 1), 1);
  thread.join();
  ::close(wake[0]);
  ::close(wake[1]);
}

// A running thread is never still: its counters may not have moved yet.
TEST(ThreadStateReader, ARunningThreadIsNeverStill) {
  const auto tid = static_cast<int64_t>(::syscall(SYS_gettid));
  ThreadStateReader reader;
  for (int i = 0; i < 3; ++i) {
    auto look = reader.look(::getpid(), tid);
    ASSERT_TRUE(look.has_value());
    EXPECT_EQ(look->state, 'R');
    EXPECT_FALSE(look->still);
  }
}

size_t open_descriptors() {
  size_t count = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) ++count;
  return count;
}

TEST(ThreadStateReader, KeepsNoDescriptorsPastItsCap) {
  const auto tid = static_cast<int64_t>(::syscall(SYS_gettid));
  ThreadStateReader reader(/*max_kept_threads=*/0);
  const size_t before = open_descriptors();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(state_of(reader, tid), 'R') << "this thread, reading";
  EXPECT_EQ(open_descriptors(), before);
}

TEST(ThreadStateReader, CapFollowsTheDescriptorLimit) {
  rlimit limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &limit), 0);
  const size_t kept = kept_threads_for_descriptor_limit();
  EXPECT_GE(kept, 16u);
  EXPECT_LE(kept, 4096u);
  if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur / 12 >= 16 && limit.rlim_cur / 12 <= 4096) {
    EXPECT_EQ(kept, limit.rlim_cur / 12) << "three files per thread in a quarter of the limit";
  }
}

// Out of descriptors, a thread that is there must not read as gone (its
// samples would be dropped): its state is unknown.
TEST(ThreadStateReaderDeathTest, OutOfDescriptorsIsUnknownNotGone) {
  EXPECT_EXIT(
      {
        rlimit limit{};
        ::getrlimit(RLIMIT_NOFILE, &limit);
        limit.rlim_cur = std::min<rlim_t>(limit.rlim_cur, 64);
        ::setrlimit(RLIMIT_NOFILE, &limit);
        while (::open("/dev/null", O_RDONLY) >= 0) {
        }
        ThreadStateReader reader;
        auto state = state_of(reader, static_cast<int64_t>(::syscall(SYS_gettid)));
        ::_exit(state == kUnknownStateLetter ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace stepscope
