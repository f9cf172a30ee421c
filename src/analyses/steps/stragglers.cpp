#include "analyses/steps/stragglers.hpp"

#include <algorithm>
#include <cmath>

namespace stepscope {

double median_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

Stragglers find_stragglers(const std::vector<std::optional<double>>& values) {
  Stragglers out;
  std::vector<double> known;
  for (const auto& v : values) {
    if (v) known.push_back(*v);
  }
  if (known.size() < 2) return out;
  double m = median_of(known);
  double margin = kStragglerTolerance * m;
  if (known.size() >= 3) {
    std::vector<double> deviations;
    for (double v : known) deviations.push_back(std::fabs(v - m));
    margin = std::max(margin, 3 * 1.4826 * median_of(deviations));
  }
  out.median = m;
  out.threshold = m + margin;
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] && *values[i] > *out.threshold) out.indexes.push_back(i);
  }
  return out;
}

}  // namespace stepscope
