// Step phases that claim time in priority order: each phase's time is what the
// phases before it left, so the phases never count a moment twice and add up to
// at most the step. A closure optimizer (LBFGS, Lightning's automatic
// optimization) runs forward and backward inside optimizer.step(): claimed
// after them, its time is its own.
#pragma once

#include <cstdint>

#include "analyses/spans/intervals.hpp"

namespace stepscope {

class PhaseClaims {
 public:
  // The time of `phase` (disjoint, sorted) that no earlier claim took.
  int64_t claim(const Intervals& phase);
  // The same of the part of `phase` inside [start, end).
  int64_t claim(const Intervals& phase, int64_t start, int64_t end);
  // Forgets every claim (for the next step), keeping the memory: a run's
  // steps claim thousands of times.
  void clear() { taken_.clear(); }

 private:
  SortedUnion taken_;
  Intervals merged_, clipped_;  // scratch
};

}  // namespace stepscope
