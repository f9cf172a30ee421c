#include "renderers/compare/markdown.hpp"

#include <fmt/format.h>

#include "renderers/compare/format.hpp"
#include "renderers/escape.hpp"
#include "renderers/fitted_name.hpp"

namespace stepscope {

namespace {

const char* verdict_mark(const MetricComparison& m) {
  switch (m.verdict) {
    case Verdict::kRegressed:
      return m.gating ? ":x: regressed" : "regressed (not gating)";
    case Verdict::kImproved:
      return ":white_check_mark: improved";
    case Verdict::kInconclusive:
      return "inconclusive";
    case Verdict::kWithinThreshold:
      return "within threshold";
    case Verdict::kNoSignificantChange:
      break;
  }
  return "no significant change";
}

void write_metrics(const char* title, const std::vector<MetricComparison>& metrics, double confidence,
                   std::ostream& out) {
  if (metrics.empty()) return;
  out << fmt::format("\n#### {}\n\n", title);
  out << fmt::format("| metric | base | cur | change | {:.0f}% interval | p | verdict |\n", 100 * confidence);
  out << "|---|---:|---:|---:|---:|---:|---|\n";
  for (const MetricComparison& m : metrics) {
    out << fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", markdown_text(m.name),
                       markdown_text(format_metric_value(m, m.base)), markdown_text(format_metric_value(m, m.cur)),
                       markdown_text(format_change(m.change.estimate)), markdown_text(format_interval(m)),
                       markdown_text(format_p_value(m)), verdict_mark(m));
  }
}

void write_section(const DiffTable& table, std::ostream& out) {
  out << fmt::format("\n<details><summary>{}</summary>\n\n", markdown_text(table.title));
  out << "| name | base | cur | diff |\n|---|---:|---:|---:|\n";
  for (const DiffRow& row : table.rows) {
    out << fmt::format("| {} | {} | {} | {}{} |\n", markdown_text(fitted_name(row.name, kShownNameChars)),
                       markdown_text(format_diff_value(table, row.base)),
                       markdown_text(format_diff_value(table, row.cur)), row.cur >= row.base ? "+" : "",
                       markdown_text(format_diff_value(table, row.cur - row.base)));
  }
  out << "\n</details>\n";
}

}  // namespace

constexpr std::string_view kMarkdownSpecial = "\\`*_[]|~";

std::string markdown_text(std::string_view text) {
  std::string printable = printable_utf8(text);
  std::string out;
  for (char c : printable) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '\n':
      case '\r':
        out += ' ';
        break;
      default:
        // What starts emphasis, code, links, strikethrough or ends a cell.
        if (kMarkdownSpecial.find(c) != std::string_view::npos) out += '\\';
        out += c;
    }
  }
  return out;
}

void write_compare_markdown(const CompareResult& r, std::ostream& out) {
  out << fmt::format("### stepscope compare: {}\n\n", markdown_text(compare_outcome(r)));
  out << fmt::format("Base {} vs current {}: {} and {} steps, the first {} and {} left out as warm-up. ",
                     markdown_text(r.base_label), markdown_text(r.cur_label), r.base_steps, r.cur_steps,
                     r.base_skipped, r.cur_skipped);
  out << fmt::format(
      "A regression needs a permutation test significant at {:.0f}% and a bootstrap interval wholly beyond "
      "the {:.1f}% threshold.\n",
      100 * (1 - r.confidence), 100 * r.threshold);
  write_metrics("Headline", r.metrics, r.confidence, out);
  write_metrics("Step phases (ms per step)", r.phases, r.confidence, out);
  for (const DiffTable& table : r.sections) write_section(table, out);
  if (!r.notes.empty()) out << '\n';
  for (const std::string& note : r.notes) out << "> " << markdown_text(note) << "\n";
}

}  // namespace stepscope
