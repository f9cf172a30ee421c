// Several ranks of one job side by side, and the stragglers among them: the
// ranks whose mean step time, or device compute time, stands out above the
// others.
//
// Rule (robust to the stragglers themselves): for each metric, a rank is a
// straggler when its value exceeds the median over ranks by more than
// max(kStragglerTolerance x median, 3 x 1.4826 x MAD), the MAD (median
// absolute deviation) term only with three or more ranks. Only the slow side
// counts: a fast rank is waited for by no one.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analyses/gpu.hpp"

namespace stepscope {

inline constexpr double kStragglerTolerance = 0.05;

struct RankMetric {
  std::string name;                          // "step_time", "compute"
  std::vector<std::optional<double>> values;  // ns, per rank in GpuAnalysis order
  std::optional<double> median_ns;
  std::optional<double> threshold_ns;  // a value above this is a straggler
  std::vector<size_t> stragglers;      // indexes into the ranks
};

struct RankComparison {
  std::vector<RankMetric> metrics;
};

RankComparison compare_ranks(const std::vector<GpuRank>& ranks);

}  // namespace stepscope
