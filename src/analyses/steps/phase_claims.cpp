#include "analyses/steps/phase_claims.hpp"

#include <utility>

namespace stepscope {

int64_t PhaseClaims::claim(const Intervals& phase) {
  int64_t time = total_length(phase) - overlap_length(phase, taken_);
  Intervals both = taken_;
  both.insert(both.end(), phase.begin(), phase.end());
  taken_ = merge_unsorted(std::move(both));
  return time;
}

}  // namespace stepscope
