#include "collectors/round_timer.hpp"

#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>

#include "util/unique_fd.hpp"

namespace stepscope {
namespace {

constexpr int64_t kMillisecond = 1'000'000;
constexpr int64_t kSecond = 1'000'000'000;

int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * kSecond + ts.tv_nsec;
}

TEST(RoundTimer, WakesAtTheDeadlineAndNotBefore) {
  RoundTimer timer;
  const int64_t deadline = now_ns() + 2 * kMillisecond;
  EXPECT_EQ(timer.wait_until(deadline, 0), RoundTimer::Woken::kDeadline);
  EXPECT_GE(now_ns(), deadline);
}

TEST(RoundTimer, APassedDeadlineReturnsAtOnce) {
  RoundTimer timer;
  EXPECT_EQ(timer.wait_until(now_ns() - kSecond, 0), RoundTimer::Woken::kDeadline);
  EXPECT_EQ(timer.wait_until(0, 0), RoundTimer::Woken::kDeadline);
}

TEST(RoundTimer, AReadableWatchedDescriptorEndsTheWait) {
  UniqueFd event(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  ASSERT_TRUE(event.valid());
  RoundTimer timer(event.get());
  const uint64_t one = 1;
  ASSERT_EQ(write(event.get(), &one, sizeof one), static_cast<ssize_t>(sizeof one));
  // Were the descriptor not watched, this would sleep an hour and then fail.
  EXPECT_EQ(timer.wait_until(now_ns() + 3600 * kSecond, 0), RoundTimer::Woken::kWatched);
}

TEST(RoundTimer, EachRoundSetsOneTimerWhileTheScheduleHolds) {
  RoundTimer timer;
  const int64_t start = now_ns();
  constexpr int kRounds = 20;
  for (int k = 1; k <= kRounds; ++k) {
    ASSERT_EQ(timer.wait_until(start + k * kMillisecond, start + (k + 1) * kMillisecond),
              RoundTimer::Woken::kDeadline);
    EXPECT_GE(now_ns(), start + k * kMillisecond);
  }
  // The first wait sets two timers; every later one only the round after its own.
  EXPECT_EQ(timer.timers_set(), kRounds + 1);
}

TEST(RoundTimer, ALateWakeupKeepsTheNextRoundsTimer) {
  RoundTimer timer;
  const int64_t now = now_ns();
  // Both deadlines have passed by the time the loop waits: both timers fire at once.
  ASSERT_EQ(timer.wait_until(now - 2 * kMillisecond, now - kMillisecond), RoundTimer::Woken::kDeadline);
  EXPECT_EQ(timer.wait_until(now - kMillisecond, now + kMillisecond), RoundTimer::Woken::kDeadline);
  EXPECT_EQ(timer.timers_set(), 3);  // the second wait found its timer set, and fired
}

TEST(RoundTimer, AnAbandonedDeadlineDoesNotEndALaterWait) {
  RoundTimer timer;
  const int64_t start = now_ns();
  // The loop announces start + 1 ms, then changes its plan (a late round).
  ASSERT_EQ(timer.wait_until(start, start + kMillisecond), RoundTimer::Woken::kDeadline);
  const int64_t later = start + 5 * kMillisecond;
  EXPECT_EQ(timer.wait_until(later, 0), RoundTimer::Woken::kDeadline);
  EXPECT_GE(now_ns(), later);
  // And a wait after a fired, never re-set timer still sleeps until its own deadline.
  const int64_t last = now_ns() + 2 * kMillisecond;
  EXPECT_EQ(timer.wait_until(last, 0), RoundTimer::Woken::kDeadline);
  EXPECT_GE(now_ns(), last);
}

}  // namespace
}  // namespace stepscope
