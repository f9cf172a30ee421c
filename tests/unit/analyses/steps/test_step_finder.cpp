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

// Two threads' phase spans (nested, touching, apart) and a thread without:
// in order, backwards and at random, the finder answers what the index does.
TEST(PhaseFinder, AnswersAsThePhaseIndexInAnyOrder) {
  stepscope::Run run;
  const SpanKind kinds[] = {SpanKind::kDataWait, SpanKind::kForward, SpanKind::kBackward, SpanKind::kOptimizer};
  for (int64_t tid : {1, 2}) {
    for (int64_t t = 0, i = 0; i < 60; ++i) {
      int64_t length = 3 + (i + tid) % 5;
      run.spans.push_back({.start_ns = t, .end_ns = t + length, .pid = 7, .tid = tid, .kind = kinds[i % 4]});
      if (i % 4 == 3) run.spans.push_back({.start_ns = t - 6, .end_ns = t + 1, .pid = 7, .tid = tid, .kind = kinds[1]});
      t += length + (i % 3 == tid ? 4 : 0);
    }
  }
  PhaseIndex index(run);
  std::vector<int64_t> times;
  for (int64_t ts = -5; ts < 500; ++ts) times.push_back(ts);
  std::vector<std::vector<int64_t>> orders = {times, {times.rbegin(), times.rend()}, times};
  std::shuffle(orders[2].begin(), orders[2].end(), std::mt19937(5));
  for (const std::vector<int64_t>& order : orders) {
    PhaseFinder finder(index);
    for (int64_t ts : order) {
      for (int64_t tid : {1, 2, 3}) {
        EXPECT_EQ(finder.phase_in_step(7, tid, ts), index.phase_in_step(7, tid, ts)) << "ts " << ts << " tid " << tid;
      }
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
