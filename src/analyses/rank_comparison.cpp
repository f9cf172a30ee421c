#include "analyses/rank_comparison.hpp"

#include <algorithm>
#include <cmath>

namespace stepscope {

namespace {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

RankMetric judge(std::string name, std::vector<std::optional<double>> values) {
  RankMetric metric;
  metric.name = std::move(name);
  metric.values = std::move(values);
  std::vector<double> known;
  for (const auto& v : metric.values) {
    if (v) known.push_back(*v);
  }
  if (known.size() < 2) return metric;
  double m = median(known);
  double threshold = kStragglerTolerance * m;
  if (known.size() >= 3) {
    std::vector<double> deviations;
    for (double v : known) deviations.push_back(std::fabs(v - m));
    threshold = std::max(threshold, 3 * 1.4826 * median(deviations));
  }
  metric.median_ns = m;
  metric.threshold_ns = m + threshold;
  for (size_t i = 0; i < metric.values.size(); ++i) {
    if (metric.values[i] && *metric.values[i] > m + threshold) metric.stragglers.push_back(i);
  }
  return metric;
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
