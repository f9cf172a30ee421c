#include <gtest/gtest.h>

#include <random>

#include "analyses/steps/phase_index.hpp"

namespace stepscope {
namespace {

// Steps of two threads with gaps between them, sorted by end as the steps analysis keeps them.
ProcessSteps steps_with_gaps() {
  ProcessSteps p;
  int64_t t = 100;
  for (int i = 0; i < 50; ++i) {
    StepRecord& step = p.steps.emplace_back();
    step.start_ns = t;
    step.end_ns = t + 10 + i % 7;
    step.tid = i % 10 == 9 ? 2 : 1;
    t = step.end_ns + (i % 3 == 0 ? 5 : 0);
  }
  return p;
}

// In order, backwards, and at random: whatever the hint, the finder answers what step_at does.
TEST(StepFinder, AnswersAsStepAtInAnyOrder) {
  ProcessSteps p = steps_with_gaps();
  std::vector<int64_t> times;
  for (int64_t ts = 0; ts < p.steps.back().end_ns + 20; ++ts) times.push_back(ts);
  std::vector<std::vector<int64_t>> orders = {times, {times.rbegin(), times.rend()}, times};
  std::shuffle(orders[2].begin(), orders[2].end(), std::mt19937(7));
  for (const std::vector<int64_t>& order : orders) {
    StepFinder finder(p);
    for (int64_t ts : order) {
      for (int64_t tid : {1, 2}) EXPECT_EQ(finder.find(tid, ts), step_at(p, tid, ts)) << "ts " << ts;
    }
  }
}

TEST(StepFinder, NoStepsNoStep) {
  ProcessSteps p;
  StepFinder finder(p);
  EXPECT_EQ(finder.find(1, 5), nullptr);
}

}  // namespace
}  // namespace stepscope
