// Several ranks of one job side by side, and the stragglers among them: the
// ranks whose mean step time, or device compute time, stands out above the
// others (the rule: stragglers.hpp).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analyses/device/gpu.hpp"
#include "analyses/steps/stragglers.hpp"

namespace stepscope {

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
