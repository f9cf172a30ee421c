// Interval unions (intervals.hpp) for the device analyses, the trace steps
// and the diagnosis: one sweep over intervals sorted by start.
#include <algorithm>
#include <cstddef>

#include "analyses/spans/intervals.hpp"

namespace stepscope {

std::vector<Interval> merge_sorted(const std::vector<Interval>& sorted) {
  SortedUnion merged(sorted.size());
  for (const Interval& interval : sorted) merged.add(interval);
  return merged.take();
}

namespace {

bool starts_before(const Interval& a, const Interval& b) { return a.start_ns < b.start_ns; }

// Where each run of intervals already sorted by start begins, then the end;
// empty once there are more than `most` runs.
std::vector<size_t> sorted_runs(const std::vector<Interval>& intervals, size_t most) {
  std::vector<size_t> begins{0};
  for (size_t i = 1; i < intervals.size(); ++i) {
    if (!starts_before(intervals[i], intervals[i - 1])) continue;
    if (begins.size() == most) return {};
    begins.push_back(i);
  }
  begins.push_back(intervals.size());
  return begins;
}

}  // namespace

// Spans come mostly in time order, thread after thread, and the callers'
// lists often in a few sorted runs: merging the runs (linear per pass, a
// pass per doubling) beats sorting millions of intervals. Unions do not
// depend on the order of equal starts, so either way gives the same result.
std::vector<Interval> merge_unsorted(std::vector<Interval> intervals) {
  constexpr size_t kMostRuns = 64;
  std::vector<size_t> runs = sorted_runs(intervals, kMostRuns);
  if (runs.empty()) {
    std::sort(intervals.begin(), intervals.end(), starts_before);
    return merge_sorted(intervals);
  }
  while (runs.size() > 2) {
    std::vector<size_t> merged{0};
    for (size_t r = 0; r + 1 < runs.size(); r += 2) {
      size_t end = std::min(r + 2, runs.size() - 1);
      std::inplace_merge(intervals.begin() + static_cast<std::ptrdiff_t>(runs[r]),
                         intervals.begin() + static_cast<std::ptrdiff_t>(runs[r + 1]),
                         intervals.begin() + static_cast<std::ptrdiff_t>(runs[end]), starts_before);
      merged.push_back(runs[end]);
    }
    runs = std::move(merged);
  }
  return merge_sorted(intervals);
}

std::vector<Interval> clip_disjoint(const std::vector<Interval>& disjoint, int64_t start, int64_t end) {
  std::vector<Interval> out;
  clip_disjoint(disjoint, start, end, out);
  return out;
}

void clip_disjoint(const std::vector<Interval>& disjoint, int64_t start, int64_t end, std::vector<Interval>& out) {
  out.clear();
  auto it = std::upper_bound(disjoint.begin(), disjoint.end(), start,
                             [](int64_t t, const Interval& i) { return t < i.end_ns; });
  for (; it != disjoint.end() && it->start_ns < end; ++it) {
    out.push_back({std::max(start, it->start_ns), std::min(end, it->end_ns)});
  }
}

int64_t total_length(const std::vector<Interval>& disjoint) {
  int64_t total = 0;
  for (const Interval& interval : disjoint) total += interval.end_ns - interval.start_ns;
  return total;
}

int64_t overlap_length(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  int64_t overlap = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    int64_t start = std::max(a[i].start_ns, b[j].start_ns);
    int64_t end = std::min(a[i].end_ns, b[j].end_ns);
    if (end > start) overlap += end - start;
    if (a[i].end_ns < b[j].end_ns) {
      ++i;
    } else {
      ++j;
    }
  }
  return overlap;
}

Intervals::const_iterator containing(const Intervals& by_start, int64_t t) {
  auto next = std::upper_bound(by_start.begin(), by_start.end(), Interval{t, INT64_MAX});
  if (next == by_start.begin() || std::prev(next)->end_ns <= t) return by_start.end();
  return std::prev(next);
}

bool CoverFinder::covers(int64_t t) {
  const Intervals& v = *intervals_;
  // How many intervals start at or before t, searched within [from, to).
  auto search = [&](size_t from, size_t to) {
    auto at = [&](size_t i) { return v.begin() + static_cast<std::ptrdiff_t>(i); };
    return static_cast<size_t>(
        std::partition_point(at(from), at(to), [&](const Interval& i) { return i.start_ns <= t; }) - v.begin());
  };
  constexpr size_t kMostSteps = 4;  // walked before a search
  if (after_ > 0 && v[after_ - 1].start_ns > t) {
    after_ = search(0, after_);
  } else {
    for (size_t steps = 0; after_ < v.size() && v[after_].start_ns <= t; ++after_) {
      if (++steps > kMostSteps) {
        after_ = search(after_, v.size());
        break;
      }
    }
  }
  return after_ > 0 && v[after_ - 1].end_ns > t;
}

}  // namespace stepscope
