#include "analyses/steps/phase_claims.hpp"

#include <algorithm>
#include <iterator>

namespace stepscope {

int64_t PhaseClaims::claim(const Intervals& phase) {
  const Intervals& taken = taken_.intervals();
  int64_t time = total_length(phase) - overlap_length(phase, taken);
  // Both are sorted and disjoint: one merging pass, no sort.
  merged_.clear();
  std::merge(taken.begin(), taken.end(), phase.begin(), phase.end(), std::back_inserter(merged_));
  taken_.clear();
  for (const Interval& interval : merged_) taken_.add(interval);
  return time;
}

int64_t PhaseClaims::claim(const Intervals& phase, int64_t start, int64_t end) {
  clip_disjoint(phase, start, end, clipped_);
  return claim(clipped_);
}

}  // namespace stepscope
