#include "renderers/compare/format.hpp"

#include <vector>

#include <fmt/format.h>

namespace stepscope {

std::string format_metric_value(const MetricComparison& m, double value) {
  if (m.unit == "bytes") return fmt::format("{:.1f} MiB", value / (1024.0 * 1024.0));
  if (m.unit == "ms") return fmt::format("{:.2f} ms", value);
  return fmt::format("{:.1f} {}", value, m.unit);
}

std::string format_change(double change) { return fmt::format("{:+.1f}%", 100 * change); }

std::string format_interval(const MetricComparison& m) {
  if (!m.p_value) return "-";
  return fmt::format("[{}, {}]", format_change(m.change.low), format_change(m.change.high));
}

std::string format_p_value(const MetricComparison& m) { return m.p_value ? fmt::format("{:.4f}", *m.p_value) : "-"; }

std::string format_diff_value(const DiffTable& table, double value) {
  if (table.unit == "%") return fmt::format("{:.1f}%", value);
  return fmt::format("{:.3f} ms", value);
}

std::string compare_outcome(const CompareResult& result) {
  std::vector<std::string> regressed;
  for (const auto* list : {&result.metrics, &result.phases}) {
    for (const MetricComparison& m : *list) {
      if (m.gating && m.verdict == Verdict::kRegressed) {
        regressed.push_back(fmt::format("{} {}", m.name, format_change(m.change.estimate)));
      }
    }
  }
  if (regressed.empty()) return "no regression";
  return fmt::format("REGRESSION: {}", fmt::join(regressed, ", "));
}

}  // namespace stepscope
