#include "analyses/compare/statistics.hpp"

#include <algorithm>
#include <cmath>

namespace stepscope {

uint64_t SplitMix64::next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t SplitMix64::below(uint64_t n) { return next() % n; }

double SplitMix64::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

double ratio_of_sums(const std::vector<RatioPoint>& points) {
  double x = 0, y = 0;
  for (const RatioPoint& p : points) {
    x += p.x;
    y += p.y;
  }
  return y != 0 ? x / y : 0;
}

namespace {

double resampled_ratio(const std::vector<RatioPoint>& points, SplitMix64& rng) {
  double x = 0, y = 0;
  for (size_t i = 0; i < points.size(); ++i) {
    const RatioPoint& p = points[rng.below(points.size())];
    x += p.x;
    y += p.y;
  }
  return y != 0 ? x / y : 0;
}

// The (1 - confidence) / 2 and (1 + confidence) / 2 quantiles, linearly
// interpolated between order statistics.
ConfidenceInterval percentile_interval(std::vector<double> values, double estimate, double confidence) {
  std::sort(values.begin(), values.end());
  auto quantile = [&](double q) {
    double rank = q * static_cast<double>(values.size() - 1);
    auto low = static_cast<size_t>(std::floor(rank));
    size_t high = std::min(low + 1, values.size() - 1);
    double frac = rank - static_cast<double>(low);
    return values[low] * (1 - frac) + values[high] * frac;
  };
  double tail = (1 - confidence) / 2;
  return {estimate, quantile(tail), quantile(1 - tail)};
}

}  // namespace

ConfidenceInterval bootstrap_ratio(const std::vector<RatioPoint>& points, const BootstrapOptions& options) {
  double estimate = ratio_of_sums(points);
  if (points.size() < 2 || options.resamples == 0) return {estimate, estimate, estimate};
  SplitMix64 rng(options.seed);
  std::vector<double> values(options.resamples);
  for (double& v : values) v = resampled_ratio(points, rng);
  return percentile_interval(std::move(values), estimate, options.confidence);
}

ConfidenceInterval bootstrap_relative_change(const std::vector<RatioPoint>& base,
                                   const std::vector<RatioPoint>& cur,
                                   const BootstrapOptions& options) {
  double base_value = ratio_of_sums(base);
  double estimate = base_value != 0 ? ratio_of_sums(cur) / base_value - 1 : 0;
  if (base.size() < 2 || cur.size() < 2 || options.resamples == 0) return {estimate, estimate, estimate};
  SplitMix64 rng(options.seed);
  std::vector<double> values;
  values.reserve(options.resamples);
  for (uint32_t i = 0; i < options.resamples; ++i) {
    double b = resampled_ratio(base, rng);
    double c = resampled_ratio(cur, rng);
    values.push_back(b != 0 ? c / b - 1 : 0);
  }
  return percentile_interval(std::move(values), estimate, options.confidence);
}

double permutation_p_value(const std::vector<RatioPoint>& base, const std::vector<RatioPoint>& cur,
                           uint32_t permutations, uint64_t seed) {
  if (base.size() < 2 || cur.size() < 2 || permutations == 0) return 1;
  auto relative_change = [](double b, double c) { return b != 0 ? c / b - 1 : 0; };
  // The test statistic is the absolute log ratio, so a halving and a doubling
  // are equally far from "no change".
  auto distance = [&](double b, double c) { return std::fabs(std::log1p(relative_change(b, c))); };
  double observed = distance(ratio_of_sums(base), ratio_of_sums(cur));
  std::vector<RatioPoint> pooled(base);
  pooled.insert(pooled.end(), cur.begin(), cur.end());
  SplitMix64 rng(seed);
  uint32_t as_far = 0;
  for (uint32_t i = 0; i < permutations; ++i) {
    // A partial Fisher-Yates shuffle: the first base.size() are the new base.
    double bx = 0, by = 0;
    for (size_t k = 0; k < base.size(); ++k) {
      std::swap(pooled[k], pooled[k + rng.below(pooled.size() - k)]);
      bx += pooled[k].x;
      by += pooled[k].y;
    }
    double cx = 0, cy = 0;
    for (size_t k = base.size(); k < pooled.size(); ++k) {
      cx += pooled[k].x;
      cy += pooled[k].y;
    }
    double b = by != 0 ? bx / by : 0, c = cy != 0 ? cx / cy : 0;
    // A tolerance so that ties with the observation (constant steps) count.
    if (distance(b, c) >= observed * (1 - 1e-12)) ++as_far;
  }
  return (1.0 + as_far) / (1.0 + permutations);
}

}  // namespace stepscope
