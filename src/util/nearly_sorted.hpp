// Sorting what is nearly sorted already. A trace writes each track's events
// in time order with a few out of place (Kineto writes some late, or ties
// with the shorter event first), or as a few stretches each in time order (a
// thread's events written in several blocks, the 508 MB trace of bench/); a
// full sort of millions of them does O(n log n) comparisons for that.
//
// Here one pass deals the elements onto a few sorted lanes (each element
// onto the first lane when that keeps it sorted, else onto the lane it came
// after when that keeps that one sorted, else onto the first lane that stays
// sorted, else onto a new lane), then the lanes are merged pairwise:
// O(n log L) for L lanes, and one pass when the range is sorted. When the
// first lane holds half the elements or more, only the others are copied
// aside and sorted, and merged back in place. Far from sorted (more than
// kMostLanes lanes, or much searching for lanes), it sorts the whole range
// instead.
//
// `less` must be a strict weak order under which only equal elements are
// equivalent (a key that ends in an id, or plain values): the result is then
// exactly std::sort's, whatever the input's order.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace stepscope {

template <typename T, typename Less>
void sort_nearly_sorted(std::span<T> items, Less less);

namespace nearly_sorted_detail {

inline constexpr size_t kMostLanes = 128;

// The lane of each element, or an empty vector when the range is too far
// from sorted to be worth it.
template <typename T, typename Less>
std::vector<uint8_t> deal_onto_lanes(std::span<const T> items, Less less, size_t& lanes) {
  static_assert(kMostLanes <= 256, "lane numbers are bytes");
  std::vector<uint8_t> lane_of(items.size());
  std::vector<T> last;  // the last element of each lane
  size_t current = 0;
  size_t searched = 0;  // lanes looked at off the fast path
  for (size_t i = 0; i < items.size(); ++i) {
    const T& item = items[i];
    if (!last.empty() && !less(item, last[0])) {
      current = 0;  // the first lane first: an element out of place does not pull the rest off it
    } else if (last.empty() || less(item, last[current])) {
      size_t lane = 0;
      while (lane < last.size() && less(item, last[lane])) ++lane;
      searched += lane + 1;
      if (lane == last.size()) {
        if (last.size() == kMostLanes) return {};
        last.push_back(item);
      }
      current = lane;
      if (searched > 4 * items.size()) return {};
    }
    last[current] = item;
    lane_of[i] = static_cast<uint8_t>(current);
  }
  lanes = last.size();
  return lane_of;
}

// When the first lane holds at least half the elements: the others are set
// aside in `aside` and sorted, the first lane closes up in place, and a merge
// from the back fills the range. It touches memory for the others only,
// where merging lane by lane needs a buffer as large as the range: on a VM
// fresh pages cost more than the merge (a trace's host spans on a thread are
// typically two lanes, the smaller a third or more of them).
template <typename T, typename Less>
void merge_others_into_first_lane(std::span<T> items, const std::vector<uint8_t>& lane_of, size_t first_lane,
                                  Less less, std::vector<T>& aside) {
  aside.clear();
  aside.reserve(items.size() - first_lane);
  size_t kept = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    if (lane_of[i] == 0) {
      items[kept++] = items[i];  // kept <= i: moves only leftwards
    } else {
      aside.push_back(items[i]);
    }
  }
  // One other lane is sorted already; several are a smaller nearly sorted range.
  sort_nearly_sorted(std::span<T>(aside), less);
  size_t to = items.size();
  size_t left = aside.size();
  while (left > 0) {
    if (kept > 0 && less(aside[left - 1], items[kept - 1])) {
      items[--to] = items[--kept];
    } else {
      items[--to] = aside[--left];
    }
  }
}

}  // namespace nearly_sorted_detail

// `scratch` holds the merge buffer between calls: a caller that sorts many
// ranges (a track after another) reuses its memory instead of touching new
// pages for each (first-touch page faults cost more than the merge here).
template <typename T, typename Less>
void sort_nearly_sorted(std::span<T> items, Less less, std::vector<T>& scratch) {
  if (std::is_sorted(items.begin(), items.end(), less)) return;
  size_t lanes = 0;
  std::vector<uint8_t> lane_of = nearly_sorted_detail::deal_onto_lanes(std::span<const T>(items), less, lanes);
  if (lane_of.empty()) {
    std::sort(items.begin(), items.end(), less);
    return;
  }
  size_t first_lane = static_cast<size_t>(std::count(lane_of.begin(), lane_of.end(), uint8_t{0}));
  if (items.size() - first_lane <= items.size() / 2) {
    nearly_sorted_detail::merge_others_into_first_lane(items, lane_of, first_lane, less, scratch);
    return;
  }
  // The lanes one after another (a counting sort by lane keeps each in order).
  std::vector<size_t> bounds(lanes + 1, 0);
  if (lanes <= 8) {
    // A count per lane is vectorized; one loop over the lanes would wait on
    // the same counter's last increment at every element.
    for (size_t lane = 0; lane < lanes; ++lane) {
      bounds[lane + 1] = static_cast<size_t>(std::count(lane_of.begin(), lane_of.end(), static_cast<uint8_t>(lane)));
    }
  } else {
    for (uint8_t lane : lane_of) bounds[lane + 1]++;
  }
  for (size_t lane = 0; lane < lanes; ++lane) bounds[lane + 1] += bounds[lane];
  scratch.resize(std::max(scratch.size(), items.size()));
  std::span<T> buffer(scratch.data(), items.size());
  {
    std::vector<size_t> next(bounds.begin(), bounds.end() - 1);
    for (size_t i = 0; i < items.size(); ++i) buffer[next[lane_of[i]]++] = items[i];
  }
  // Adjacent lanes merged pairwise, back and forth between the buffer and items.
  std::span<T> from(buffer), to = items;
  while (bounds.size() > 2) {
    std::vector<size_t> merged{0};
    for (size_t r = 0; r + 1 < bounds.size(); r += 2) {
      auto first = from.begin() + static_cast<std::ptrdiff_t>(bounds[r]);
      auto middle = from.begin() + static_cast<std::ptrdiff_t>(bounds[r + 1]);
      auto out = to.begin() + static_cast<std::ptrdiff_t>(bounds[r]);
      if (r + 2 < bounds.size()) {
        std::merge(first, middle, middle, from.begin() + static_cast<std::ptrdiff_t>(bounds[r + 2]), out, less);
        merged.push_back(bounds[r + 2]);
      } else {
        std::copy(first, middle, out);
        merged.push_back(bounds[r + 1]);
      }
    }
    bounds = std::move(merged);
    std::swap(from, to);
  }
  if (from.data() != items.data()) std::copy(from.begin(), from.end(), items.begin());
}

template <typename T, typename Less>
void sort_nearly_sorted(std::span<T> items, Less less) {
  std::vector<T> scratch;
  sort_nearly_sorted(items, less, scratch);
}

}  // namespace stepscope
