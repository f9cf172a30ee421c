#include "analyses/samples_by_thread.hpp"

#include <gtest/gtest.h>

namespace stepscope {
namespace {

std::vector<int64_t> times(const SamplesByThread& index, SamplesByThread::Samples samples) {
  std::vector<int64_t> out;
  for (uint32_t i : samples) out.push_back(index.sample(i).ts_ns);
  return out;
}

TEST(SamplesByThread, EachWantedThreadsSamplesByTimeWithinAWindow) {
  stepscope::Run run;
  StackId stack = run.stacks.intern({run.intern_frame("f", "f.py", 1)});
  auto sample = [&](int64_t ts, int64_t pid, int64_t tid, ThreadState state) {
    run.samples.push_back({ts, pid, tid, stack, state});
  };
  // Rounds interleave the threads; thread (1, 2) comes out of order once.
  sample(10, 1, 1, ThreadState::kRunning);
  sample(30, 1, 2, ThreadState::kIdle);
  sample(20, 1, 2, ThreadState::kRunning);
  sample(20, 1, 1, ThreadState::kIdle);
  run.samples.push_back({30, 1, 1, StackTree::kRoot, ThreadState::kRunning});  // no stack: never indexed
  sample(40, 1, 1, ThreadState::kDiskWait);
  sample(10, 5, 5, ThreadState::kRunning);
  SamplesByThread index(run, [](int64_t pid, int64_t tid) {
    if (pid == 5) return WantedSamples::kNone;
    return tid == 2 ? WantedSamples::kNotIdle : WantedSamples::kAll;
  });
  EXPECT_EQ(times(index, index.of_thread(1, 1)), (std::vector<int64_t>{10, 20, 40}));
  EXPECT_EQ(times(index, index.of_thread(1, 1, 15, 40)), (std::vector<int64_t>{20}));
  EXPECT_EQ(times(index, index.of_thread(1, 2)), (std::vector<int64_t>{20}));  // its idle sample left out
  EXPECT_TRUE(index.of_thread(5, 5).empty());
  EXPECT_TRUE(index.of_thread(7, 7).empty());
  EXPECT_EQ(index.threads_of(1), (std::vector<int64_t>{1, 2}));
  EXPECT_TRUE(index.threads_of(5).empty());
}

TEST(SamplesByThread, ThreadsThatShareACacheSlotStayApart) {
  stepscope::Run run;
  StackId stack = run.stacks.intern({run.intern_frame("f", "f.py", 1)});
  // tids 3 and 67 (and pid 9's tid 3) fall in one slot of the lookup's cache.
  for (int64_t ts = 0; ts < 4; ++ts) {
    run.samples.push_back({ts, 1, 3, stack, ThreadState::kRunning});
    run.samples.push_back({ts, 1, 67, stack, ThreadState::kRunning});
    run.samples.push_back({ts, 9, 3, stack, ThreadState::kRunning});
  }
  SamplesByThread index(run, [](int64_t, int64_t) { return WantedSamples::kAll; });
  for (auto [pid, tid] : {std::pair<int64_t, int64_t>{1, 3}, {1, 67}, {9, 3}}) {
    SamplesByThread::Samples samples = index.of_thread(pid, tid);
    ASSERT_EQ(samples.size(), 4u);
    for (uint32_t i : samples) {
      EXPECT_EQ(index.sample(i).pid, pid);
      EXPECT_EQ(index.sample(i).tid, tid);
    }
  }
}

}  // namespace
}  // namespace stepscope
