#include "analyses/counter_series.hpp"

#include <gtest/gtest.h>

namespace stepscope {
namespace {

stepscope::Run counter_run(int values) {
  stepscope::Run run;
  run.counter_tracks.push_back({run.strings.intern("cpu.total.percent"), 0, run.strings.intern("percent")});
  run.counter_tracks.push_back({run.strings.intern("empty"), 0, run.strings.intern("")});
  for (int i = values - 1; i >= 0; --i) run.counter_values.push_back({0, i, static_cast<double>(i)});  // reversed
  return run;
}

TEST(CounterSeries, ShortTracksAreKeptWholeInTimeOrder) {
  std::vector<CounterSeries> series = build_counter_series(counter_run(10), {.max_points = 100});
  ASSERT_EQ(series.size(), 1u);  // the empty track has no series
  EXPECT_EQ(series[0].track, 0u);
  EXPECT_EQ(series[0].raw_points, 10u);
  ASSERT_EQ(series[0].ts_ns.size(), 10u);
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(series[0].ts_ns[i], i);
    EXPECT_EQ(series[0].values[i], i);
  }
}

TEST(CounterSeries, LongTracksAreAveragedInEqualTimeBuckets) {
  std::vector<CounterSeries> series = build_counter_series(counter_run(1000), {.max_points = 10});
  ASSERT_EQ(series.size(), 1u);
  EXPECT_EQ(series[0].raw_points, 1000u);
  ASSERT_EQ(series[0].values.size(), 10u);
  for (int k = 0; k < 10; ++k) {
    // Bucket k holds times 100k .. 100k + 99 (width 1000 / 10).
    EXPECT_DOUBLE_EQ(series[0].values[k], 100.0 * k + 49.5);
    EXPECT_EQ(series[0].ts_ns[k], 100 * k + 49);
  }
}

}  // namespace
}  // namespace stepscope
