#include "analyses/device/rank_comparison.hpp"

#include <utility>

#include "analyses/steps/stragglers.hpp"

namespace stepscope {

namespace {

RankMetric judge(std::string name, std::vector<std::optional<double>> values) {
  Stragglers found = find_stragglers(values);
  return RankMetric{std::move(name), std::move(values), found.median, found.threshold, std::move(found.indexes)};
}

}  // namespace

RankComparison compare_ranks(const std::vector<GpuRank>& ranks) {
  std::vector<std::optional<double>> step, compute;
  for (const GpuRank& rank : ranks) {
    step.push_back(rank.step_mean_ns);
    compute.push_back(rank.events ? std::optional<double>(static_cast<double>(rank.temporal.compute_ns))
                                  : std::nullopt);
  }
  RankComparison comparison;
  comparison.metrics.push_back(judge("step_time", std::move(step)));
  comparison.metrics.push_back(judge("compute", std::move(compute)));
  return comparison;
}

}  // namespace stepscope
