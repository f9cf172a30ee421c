#include "run/run_window.hpp"

#include <gtest/gtest.h>

namespace stepscope {
namespace {

stepscope::Run three_seconds() {
  stepscope::Run run;
  for (int64_t t = 0; t < 3; ++t) {
    run.samples.push_back({.ts_ns = t * 1'000'000'000 + 5, .pid = 1, .tid = 1});
    run.spans.push_back({.start_ns = t * 1'000'000'000, .end_ns = t * 1'000'000'000 + 900, .pid = 1, .tid = 1});
    run.counter_values.push_back({.track = 0, .ts_ns = t * 1'000'000'000 + 7, .value = static_cast<double>(t)});
  }
  run.flows.push_back({.from = 0, .to = 1});  // crosses the window's start: goes
  run.flows.push_back({.from = 1, .to = 2});  // inside it: kept, renumbered
  return run;
}

TEST(RunWindow, ExtentCoversEverythingAndTheRecordingsStart) {
  stepscope::Run run = three_seconds();
  auto extent = run_extent(run);
  ASSERT_TRUE(extent);
  EXPECT_EQ(extent->from_ns, 0);
  EXPECT_EQ(extent->to_ns, 2'000'000'900);
  run.spans.erase(run.spans.begin());
  run.metadata["start_clock_ns"] = "-50";  // the recorder started before its first sample
  EXPECT_EQ(run_extent(run)->from_ns, -50);
  EXPECT_FALSE(run_extent(stepscope::Run{}));
}

TEST(RunWindow, KeepsWhatHappenedInsideAndTheFlowsBetweenKeptSpans) {
  stepscope::Run run = three_seconds();
  keep_window(run, {1'000'000'000, 3'000'000'000});
  ASSERT_EQ(run.samples.size(), 2u);
  EXPECT_EQ(run.samples[0].ts_ns, 1'000'000'005);
  ASSERT_EQ(run.spans.size(), 2u);
  EXPECT_EQ(run.spans[0].start_ns, 1'000'000'000);
  ASSERT_EQ(run.counter_values.size(), 2u);
  EXPECT_EQ(run.counter_values[0].value, 1);
  ASSERT_EQ(run.flows.size(), 1u);
  EXPECT_EQ(run.flows[0].from, 0u);
  EXPECT_EQ(run.flows[0].to, 1u);
}

// The window is half-open: what starts at its end belongs to the next one,
// but a counter stamped at its end (a step's, at the step's end) stays.
TEST(RunWindow, TheEndIsLeftOutButForCounters) {
  stepscope::Run run = three_seconds();
  keep_window(run, {0, 1'000'000'000});
  EXPECT_EQ(run.spans.size(), 1u);
  EXPECT_EQ(run.samples.size(), 1u);
  EXPECT_TRUE(run.flows.empty());
  run = three_seconds();
  keep_window(run, {0, 1'000'000'007});
  EXPECT_EQ(run.counter_values.size(), 2u);
}

}  // namespace
}  // namespace stepscope
