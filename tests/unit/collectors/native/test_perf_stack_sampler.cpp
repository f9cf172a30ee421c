#include "collectors/native/perf_stack_sampler.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <chrono>
#include <ctime>
#include <memory>
#include <optional>
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

// A spinning child and a sampler on its thread, at 1 ms; the tests skip,
// saying why, where the compiler or perf events are missing.
class NativePerfSampling : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    auto program = programs_.compile("spin", test::kSpinProgram, "", why);
    if (program.empty()) GTEST_SKIP() << why;
    child_.emplace(program);
    ASSERT_TRUE(child_->wait_until_exec(program));
    opened_ns_ = monotonic_ns();
    sampler_ = PerfStackSampler::open(child_->pid(), kMillisecond, kStackBytes, why);
    if (!sampler_) GTEST_SKIP() << "perf_event_open refused here: " << why;
  }
  pid_t child_pid() const { return child_->pid(); }
  bool first_sample(UserStackSample& sample) {
    return test::sample_until(*sampler_, child_pid(), 5s, [](const UserStackSample&) { return true; }, sample);
  }

  test::CompiledPrograms programs_;
  std::optional<test::ChildProgram> child_;
  std::unique_ptr<PerfStackSampler> sampler_;
  int64_t opened_ns_ = 0;
};

TEST_F(NativePerfSampling, CopiesTheRegistersAndStackOfARunningThread) {
  const int64_t opened_ns = opened_ns_;
  PerfStackSampler* sampler = sampler_.get();
  UserStackSample sample;
  ASSERT_TRUE(first_sample(sample));
  EXPECT_EQ(sample.tid, child_pid());
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

TEST_F(NativePerfSampling, HandsOutTheNewestCopyOnce) {
  PerfStackSampler* sampler = sampler_.get();
  UserStackSample sample;
  ASSERT_TRUE(first_sample(sample));
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
  ::kill(child_pid(), SIGSTOP);
  std::this_thread::sleep_for(5ms);
  sampler->take_newest(sample);
  EXPECT_FALSE(sampler->take_newest(sample));
  ::kill(child_pid(), SIGCONT);
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
