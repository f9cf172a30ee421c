#include "collectors/native/perf_stack_sampler.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <chrono>
#include <ctime>
#include <memory>
#include <string>
#include <thread>

#include "collectors/native/native_test_programs.hpp"

namespace stepscope {
namespace {

using namespace std::chrono_literals;

constexpr int64_t kMillisecond = 1'000'000;
constexpr uint32_t kStackBytes = 16 * 1024;

int64_t monotonic_ns() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
}

TEST(NativePerfStackSampler, CopiesTheRegistersAndStackOfARunningThread) {
  test::CompiledPrograms programs;
  std::string why;
  auto program = programs.compile("spin", test::kSpinProgram, "", why);
  if (program.empty()) GTEST_SKIP() << why;
  test::ChildProgram child(program);
  ASSERT_TRUE(child.wait_until_exec(program));
  int64_t opened_ns = monotonic_ns();
  auto sampler = PerfStackSampler::open(child.pid(), kMillisecond, kStackBytes, why);
  if (!sampler) GTEST_SKIP() << "perf_event_open refused here: " << why;

  UserStackSample sample;
  ASSERT_TRUE(test::sample_until(*sampler, child.pid(), 5s, [](const UserStackSample&) { return true; }, sample));
  EXPECT_EQ(sample.tid, child.pid());
  EXPECT_GE(sample.time_ns, opened_ns);  // CLOCK_MONOTONIC, as asked
  EXPECT_LE(sample.time_ns, monotonic_ns());
  EXPECT_NE(sample.regs[kDwarfRip], 0u);
  EXPECT_NE(sample.regs[kDwarfRsp], 0u);
  EXPECT_EQ(sample.regs[kDwarfRsp] % 8, 0u);
  // The child's stack is shallow: the copy ends where its stack does, short
  // of the size asked for, but holds main's frame and more.
  EXPECT_GT(sample.stack.size(), 64u);
  EXPECT_LE(sample.stack.size(), kStackBytes);
  EXPECT_GE(sampler->samples_taken(), 1u);
}

TEST(NativePerfStackSampler, HandsOutTheNewestCopyOnce) {
  test::CompiledPrograms programs;
  std::string why;
  auto program = programs.compile("spin", test::kSpinProgram, "", why);
  if (program.empty()) GTEST_SKIP() << why;
  test::ChildProgram child(program);
  ASSERT_TRUE(child.wait_until_exec(program));
  auto sampler = PerfStackSampler::open(child.pid(), kMillisecond, kStackBytes, why);
  if (!sampler) GTEST_SKIP() << "perf_event_open refused here: " << why;

  UserStackSample sample;
  ASSERT_TRUE(test::sample_until(*sampler, child.pid(), 5s, [](const UserStackSample&) { return true; }, sample));
  // About 50 copies at 1 ms each, more than the ring holds (7 of 16 KiB):
  // the kernel overwrites the oldest, and the one handed out is the newest.
  std::this_thread::sleep_for(50ms);
  const int64_t previous_ns = sample.time_ns;
  const uint64_t taken = sampler->samples_taken();
  ASSERT_TRUE(sampler->take_newest(sample));
  EXPECT_GT(sample.time_ns, previous_ns);
  EXPECT_LE(sample.time_ns, monotonic_ns());
  EXPECT_EQ(sampler->samples_taken(), taken + 1);
  // A thread that does not run leaves no new copy: nothing is handed out twice.
  ::kill(child.pid(), SIGSTOP);
  std::this_thread::sleep_for(5ms);
  sampler->take_newest(sample);
  EXPECT_FALSE(sampler->take_newest(sample));
  ::kill(child.pid(), SIGCONT);
}

TEST(NativePerfStackSampler, AGoneThreadIsExplained) {
  pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  ASSERT_GT(gone, 0);
  ::waitpid(gone, nullptr, 0);
  std::string why;
  EXPECT_EQ(PerfStackSampler::open(gone, kMillisecond, kStackBytes, why), nullptr);
  EXPECT_NE(why.find(std::to_string(gone)), std::string::npos) << why;
}

TEST(NativePerfStackSampler, ANonPositivePeriodIsRefused) {
  std::string why;
  EXPECT_EQ(PerfStackSampler::open(::getpid(), 0, kStackBytes, why), nullptr);
  EXPECT_NE(why.find("period"), std::string::npos) << why;
}

TEST(NativePerfStackSampler, RefusalsNameTheirCauseAndFix) {
  std::string denied = explain_perf_refusal(EACCES);
  EXPECT_NE(denied.find("perf_event_paranoid"), std::string::npos) << denied;
  EXPECT_NE(denied.find("CAP_PERFMON"), std::string::npos) << denied;
  EXPECT_NE(explain_perf_refusal(EPERM).find("sysctl"), std::string::npos);
  EXPECT_NE(explain_perf_refusal(ENOSYS).find("seccomp"), std::string::npos);
  EXPECT_NE(explain_perf_refusal(ENOENT).find("does not offer perf events"), std::string::npos);
  EXPECT_NE(explain_perf_refusal(ESRCH).find("exited"), std::string::npos);
  EXPECT_FALSE(explain_perf_refusal(EIO).empty());
}

}  // namespace
}  // namespace stepscope
