#include "analyses/counter_values_by_track.hpp"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

namespace stepscope {
namespace {

std::vector<std::pair<int64_t, double>> points(const CounterValuesByTrack& by_track, CounterTrackId track) {
  std::vector<std::pair<int64_t, double>> out;
  by_track.for_each(track, [&out](const CounterValue& v) { out.emplace_back(v.ts_ns, v.value); });
  return out;
}

// Two tracks interleaved, one out of time order, and a value naming a track
// the run does not have.
Run run_with_counters() {
  stepscope::Run run;
  run.counter_tracks.push_back({run.strings.intern("cpu.total.percent"), 0, run.strings.intern("%")});
  run.counter_tracks.push_back({run.strings.intern("memory.used_bytes"), 0, run.strings.intern("bytes")});
  run.counter_values = {{0, 30, 1.0}, {1, 10, 5.0}, {0, 10, 2.0}, {7, 15, 9.0}, {1, 20, 6.0}, {0, 10, 3.0}};
  return run;
}

TEST(CounterValuesByTrack, GroupsEachTracksValuesInTheRunsOrder) {
  stepscope::Run run = run_with_counters();
  CounterValuesByTrack by_track(run);
  ASSERT_EQ(by_track.tracks(), 2u);
  EXPECT_EQ(by_track.count(0), 3u);
  EXPECT_EQ(by_track.count(1), 2u);
  EXPECT_EQ(points(by_track, 0), (std::vector<std::pair<int64_t, double>>{{30, 1.0}, {10, 2.0}, {10, 3.0}}));
  EXPECT_EQ(points(by_track, 1), (std::vector<std::pair<int64_t, double>>{{10, 5.0}, {20, 6.0}}));
}

TEST(CounterValuesByTrack, SortsEachTrackByTimeKeepingTheOrderOfEqualTimes) {
  stepscope::Run run = run_with_counters();
  CounterValuesByTrack by_track(run);
  by_track.sort_by_time();
  EXPECT_EQ(points(by_track, 0), (std::vector<std::pair<int64_t, double>>{{10, 2.0}, {10, 3.0}, {30, 1.0}}));
  EXPECT_EQ(points(by_track, 1), (std::vector<std::pair<int64_t, double>>{{10, 5.0}, {20, 6.0}}));
}

TEST(CounterValuesByTrack, ARunWithoutCountersHasNoTracks) {
  stepscope::Run run;
  CounterValuesByTrack by_track(run);
  EXPECT_EQ(by_track.tracks(), 0u);
}

}  // namespace
}  // namespace stepscope
