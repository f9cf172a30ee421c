// Time intervals and their unions, the one spelling the analyses share (the
// device analyses, the trace steps, the diagnosis' rules): half-open
// [start_ns, end_ns), ordered by start, then end.
#pragma once

#include <algorithm>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace stepscope {

struct Interval {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  auto operator<=>(const Interval&) const = default;  // by start, then end
};
using Intervals = std::vector<Interval>;

// The union of intervals added in order of start, built as they come: no
// list of millions of intervals to merge afterwards.
class SortedUnion {
 public:
  // `most`, when known, is how many intervals may come: room for them all is
  // reserved, as capacity never touched costs no memory, where regrowing
  // copies the union and touches fresh pages twice.
  explicit SortedUnion(size_t most = 0) { merged_.reserve(most); }
  void add(const Interval& interval) {
    if (!merged_.empty() && interval.start_ns <= merged_.back().end_ns) {
      merged_.back().end_ns = std::max(merged_.back().end_ns, interval.end_ns);
    } else {
      merged_.push_back(interval);
    }
  }
  Intervals take() { return std::move(merged_); }
  const Intervals& intervals() const { return merged_; }
  // Empty again, keeping the memory.
  void clear() { merged_.clear(); }

 private:
  Intervals merged_;
};

// Merges intervals sorted by start into disjoint ones.
Intervals merge_sorted(const Intervals& sorted);
int64_t total_length(const Intervals& disjoint);
// The time both lists cover (each disjoint and sorted).
int64_t overlap_length(const Intervals& a, const Intervals& b);
// Merges intervals in any order into disjoint ones sorted by start.
Intervals merge_unsorted(Intervals intervals);
// The part of disjoint, sorted intervals inside [start, end).
Intervals clip_disjoint(const Intervals& disjoint, int64_t start, int64_t end);
// The same into `out`, replacing what it held (no allocation once it has room).
void clip_disjoint(const Intervals& disjoint, int64_t start, int64_t end, Intervals& out);
// The interval of `by_start` (sorted by start) that contains `t`: the last to
// start at or before it, if it has not ended; end() when there is none.
Intervals::const_iterator containing(const Intervals& by_start, int64_t t);
// Whether an interval of `disjoint` (sorted by start) contains `t`.
inline bool covers(const Intervals& disjoint, int64_t t) { return containing(disjoint, t) != disjoint.end(); }

// `covers` for times that mostly come in order, as a thread's samples do:
// it walks on from the interval found last, and searches only when a time
// goes back or skips far ahead. The same answers as covers(); the list must
// outlive it.
class CoverFinder {
 public:
  explicit CoverFinder(const Intervals& disjoint) : intervals_(&disjoint) {}
  bool covers(int64_t t);

 private:
  const Intervals* intervals_;
  size_t after_ = 0;  // how many intervals start at or before the last time asked
};

}  // namespace stepscope
