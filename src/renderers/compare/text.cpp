#include "renderers/compare/text.hpp"

#include <fmt/format.h>

#include "renderers/compare/format.hpp"
#include "renderers/escape.hpp"
#include "renderers/fitted_name.hpp"

namespace stepscope {

namespace {

std::string side(const std::string& label, const std::string& origin, size_t steps, size_t skipped) {
  return fmt::format("{} ({} steps from {}, first {} left out)", printable_utf8(label), steps, origin, skipped);
}

void write_metrics(const char* title, const std::vector<MetricComparison>& metrics, double confidence,
                   std::ostream& out) {
  if (metrics.empty()) return;
  out << fmt::format("\n{}\n", title);
  out << fmt::format("  {:<20} {:>18} {:>18} {:>8} {:>20} {:>7}  {}\n", "metric", "base", "cur", "change",
                     fmt::format("{:.0f}% interval", 100 * confidence), "p", "verdict");
  for (const MetricComparison& m : metrics) {
    std::string verdict = verdict_name(m.verdict);
    if (m.verdict == Verdict::kRegressed && m.gating) verdict = "REGRESSED";
    out << fmt::format("  {:<20} {:>18} {:>18} {:>8} {:>20} {:>7}  {}{}\n", m.name, format_metric_value(m, m.base),
                       format_metric_value(m, m.cur), format_change(m.change.estimate), format_interval(m),
                       format_p_value(m), verdict, m.gating ? "" : " (not gating)");
  }
}

void write_section(const DiffTable& table, std::ostream& out) {
  out << fmt::format("\n{}\n", table.title);
  out << fmt::format("  {:>10} {:>10} {:>10}  {}\n", "base", "cur", "diff", "name");
  for (const DiffRow& row : table.rows) {
    out << fmt::format("  {:>10} {:>10} {:>10}  {}\n", format_diff_value(table, row.base),
                       format_diff_value(table, row.cur),
                       (row.cur >= row.base ? "+" : "") + format_diff_value(table, row.cur - row.base),
                       fitted_name(row.name, kShownNameChars));
  }
}

}  // namespace

void write_compare_text(const CompareResult& r, std::ostream& out) {
  out << fmt::format("BASE {}\nCUR  {}\n", side(r.base_label, r.base_origin, r.base_steps, r.base_skipped),
                     side(r.cur_label, r.cur_origin, r.cur_steps, r.cur_skipped));
  out << fmt::format(
      "threshold {:.1f}%; significance: permutation test at {:.0f}%; intervals: bootstrap, {} resamples, seed {}\n",
      100 * r.threshold, 100 * (1 - r.confidence), r.resamples, r.seed);
  write_metrics("Headline (steady steps; peak memory over all steps)", r.metrics, r.confidence, out);
  write_metrics("Step phases (ms per step)", r.phases, r.confidence, out);
  for (const DiffTable& table : r.sections) write_section(table, out);
  for (const std::string& note : r.notes) out << "\nnote: " << note;
  if (!r.notes.empty()) out << '\n';
  out << fmt::format("\nResult: {}\n", compare_outcome(r));
}

}  // namespace stepscope
