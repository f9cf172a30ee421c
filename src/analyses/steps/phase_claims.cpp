#include "analyses/steps/phase_claims.hpp"

#include <algorithm>
#include <iterator>

namespace stepscope {

int64_t PhaseClaims::claim(const Intervals& phase) {
  int64_t time = total_length(phase) - overlap_length(phase, taken_);
  // Both are sorted and disjoint: one merging pass, then touching ones joined.
  merged_.clear();
  std::merge(taken_.begin(), taken_.end(), phase.begin(), phase.end(), std::back_inserter(merged_));
  taken_.clear();
  for (const Interval& interval : merged_) {
    if (!taken_.empty() && interval.start_ns <= taken_.back().end_ns) {
      taken_.back().end_ns = std::max(taken_.back().end_ns, interval.end_ns);
    } else {
      taken_.push_back(interval);
    }
  }
  return time;
}

int64_t PhaseClaims::claim(const Intervals& phase, int64_t start, int64_t end) {
  clip_disjoint(phase, start, end, clipped_);
  return claim(clipped_);
}

}  // namespace stepscope
