#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

#include "util/nearly_sorted.hpp"

namespace stepscope {
namespace {

// (key, position): a strict total order even with repeated keys, as the
// analyses' sort keys end in a span id.
using Item = std::pair<int, int>;

std::vector<Item> numbered(const std::vector<int>& keys) {
  std::vector<Item> items;
  for (int i = 0; i < static_cast<int>(keys.size()); ++i) items.emplace_back(keys[i], i);
  return items;
}

void expect_same_as_sort(std::vector<Item> items) {
  std::vector<Item> expected = items;
  std::sort(expected.begin(), expected.end());
  sort_nearly_sorted(std::span<Item>(items), std::less<Item>());
  EXPECT_EQ(items, expected);
}

TEST(SortNearlySorted, SortedEmptyAndSingleStayAsTheyAre) {
  expect_same_as_sort({});
  expect_same_as_sort(numbered({7}));
  expect_same_as_sort(numbered({1, 2, 2, 3, 9}));
}

TEST(SortNearlySorted, OneLateAndOneEarlyElement) {
  expect_same_as_sort(numbered({1, 2, 3, 4, 0, 5, 6, 7}));   // one behind its time
  expect_same_as_sort(numbered({1, 9, 2, 3, 4, 5, 6, 7}));   // one ahead of its time
  expect_same_as_sort(numbered({100, 1, 2, 3, 4, 5, 6, 7})); // the first one far ahead
}

// A track written in several blocks, each in time order over the same
// times (copies of one here), a few ties out of place in each.
TEST(SortNearlySorted, CopiesOfOneSortedRunWithTiesOutOfPlace) {
  for (int copies : {2, 34, 200}) {
    std::vector<int> keys;
    for (int c = 0; c < copies; ++c) {
      for (int i = 0; i < 300; ++i) keys.push_back(i % 50 == 7 ? i - 1 : i);
    }
    expect_same_as_sort(numbered(keys));
  }
}

// Sorted sequences interleaved at random, the first with `first_share` of
// the elements: a thread's host spans are two such lanes (one holding a
// third of them or more), which are set aside and merged back in place.
std::vector<int> interleaved_lanes(int lanes, double first_share, std::mt19937& random) {
  std::vector<int> next(lanes);
  for (int lane = 0; lane < lanes; ++lane) next[lane] = lane * 7;  // the later lanes start later
  std::bernoulli_distribution first(first_share);
  std::uniform_int_distribution<int> other(1, lanes - 1);
  std::vector<int> keys;
  for (int i = 0; i < 3000; ++i) {
    int lane = first(random) ? 0 : other(random);
    keys.push_back(next[lane]);
    next[lane] += 1 + lane % 3;
  }
  return keys;
}

TEST(SortNearlySorted, InterleavedLanesAroundHalfMatchSort) {
  std::mt19937 random(7);
  for (int lanes : {2, 3, 5, 40}) {
    for (double first_share : {0.3, 0.5, 0.6, 0.9}) {
      SCOPED_TRACE(testing::Message() << lanes << " lanes, first " << first_share);
      expect_same_as_sort(numbered(interleaved_lanes(lanes, first_share, random)));
    }
  }
}

TEST(SortNearlySorted, ReversedFallsBackToAFullSort) { expect_same_as_sort(numbered({9, 8, 7, 6, 5, 4, 3, 2, 1})); }

TEST(SortNearlySorted, RandomDisorderOfEveryDegreeMatchesSort) {
  std::mt19937 random(42);
  for (int swaps : {1, 3, 10, 100, 1000, 5000}) {
    std::vector<int> keys(2000);
    for (int i = 0; i < 2000; ++i) keys[i] = i / 3;  // repeated keys
    std::uniform_int_distribution<int> at(0, 1999);
    for (int s = 0; s < swaps; ++s) std::swap(keys[at(random)], keys[at(random)]);
    expect_same_as_sort(numbered(keys));
  }
}

}  // namespace
}  // namespace stepscope
