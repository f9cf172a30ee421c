#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "analyses/device/gpu.hpp"
#include "analyses/spans/intervals.hpp"

namespace stepscope {
namespace {

TEST(Containing, FindsTheIntervalATimeFallsIn) {
  const Intervals steps{{0, 10}, {10, 20}, {30, 40}};
  EXPECT_EQ(containing(steps, 0), steps.begin());       // a start is inside
  EXPECT_EQ(containing(steps, 10), steps.begin() + 1);  // an end is not
  EXPECT_EQ(containing(steps, 39), steps.begin() + 2);
  EXPECT_EQ(containing(steps, 25), steps.end());        // a gap
  EXPECT_EQ(containing(steps, -1), steps.end());
  EXPECT_EQ(containing(steps, 40), steps.end());
  const Intervals none;
  EXPECT_EQ(containing(none, 5), none.end());
}

// In order, backwards, at random and leaping ahead: whatever it found last,
// the finder answers what covers() does.
TEST(CoverFinder, AnswersAsCoversInAnyOrder) {
  Intervals disjoint;
  for (int64_t t = 5, i = 0; i < 200; ++i) {
    disjoint.push_back({t, t + 1 + i % 4});
    t += 1 + i % 4 + (i % 3 == 0 ? 0 : i % 5);  // touching, near and far apart
  }
  std::vector<int64_t> times;
  for (int64_t t = 0; t < disjoint.back().end_ns + 10; ++t) times.push_back(t);
  std::vector<std::vector<int64_t>> orders = {times, {times.rbegin(), times.rend()}, times, {}};
  std::shuffle(orders[2].begin(), orders[2].end(), std::mt19937(11));
  for (size_t i = 0; i < times.size(); i += 37) orders[3].push_back(times[i]);  // skips past several at once
  for (const std::vector<int64_t>& order : orders) {
    CoverFinder finder(disjoint);
    for (int64_t t : order) EXPECT_EQ(finder.covers(t), covers(disjoint, t)) << "t " << t;
  }
  const Intervals none;
  CoverFinder nothing(none);
  EXPECT_FALSE(nothing.covers(3));
}

// merge_unsorted merges a few sorted runs instead of sorting: the union must
// be that of sorting, for few runs and many.
TEST(MergeUnsorted, SortedRunsGiveTheUnionThatSortingGives) {
  uint64_t state = 42;
  auto next = [&state](int64_t below) {  // a fixed LCG: the same cases on every run
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int64_t>((state >> 33) % static_cast<uint64_t>(below));
  };
  for (size_t runs : {1u, 2u, 3u, 7u, 64u, 65u, 500u}) {
    std::vector<Interval> intervals;
    for (size_t r = 0; r < runs; ++r) {
      int64_t at = next(1000);
      for (int i = 0; i < 40; ++i) {
        at += next(30);
        intervals.push_back({at, at + next(50)});
      }
    }
    std::vector<Interval> sorted = intervals;
    std::sort(sorted.begin(), sorted.end(), [](const Interval& a, const Interval& b) { return a.start_ns < b.start_ns; });
    std::vector<Interval> expected = merge_sorted(sorted);
    std::vector<Interval> got = merge_unsorted(intervals);
    ASSERT_EQ(got.size(), expected.size()) << runs << " runs";
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].start_ns, expected[i].start_ns);
      EXPECT_EQ(got[i].end_ns, expected[i].end_ns);
    }
    EXPECT_GT(total_length(got), 0);
  }
  EXPECT_TRUE(merge_unsorted({}).empty());
}

}  // namespace
}  // namespace stepscope
