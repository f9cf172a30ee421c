#include "renderers/compare/sweep_html.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "renderers/escape.hpp"

namespace stepscope {

namespace {

constexpr int kRowHeight = 28;
constexpr int kLabelWidth = 260;
constexpr int kBarWidth = 420;

std::string xml(std::string_view text) {
  std::string out;
  append_xml_text(out, text);
  return out;
}

const std::optional<ConfidenceInterval>& charted(const SweepResult& r, const SweepRow& row) {
  return r.best_by == "samples_per_sec" ? row.samples_per_sec : row.step_time_ms;
}

// Horizontal bars, one per setting, with the interval as a whisker.
std::string svg_chart(const SweepResult& r) {
  double most = 0;
  for (const SweepRow& row : r.rows) {
    if (const auto& i = charted(r, row)) most = std::max(most, i->high);
  }
  if (most <= 0) return {};
  int height = kRowHeight * static_cast<int>(r.rows.size()) + 30;
  std::string s = fmt::format(
      "<svg width=\"{}\" height=\"{}\" font-family=\"sans-serif\" "
      "font-size=\"12\">\n",
      kLabelWidth + kBarWidth + 140, height);
  auto x = [&](double v) { return kLabelWidth + v / most * kBarWidth; };
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const SweepRow& row = r.rows[i];
    int y = kRowHeight * static_cast<int>(i) + 5;
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", kLabelWidth - 8, y + 16,
                     xml(row.label));
    const auto& v = charted(r, row);
    if (!v) continue;
    const char* colour = r.best == i ? "#2e7d32" : "#5c7cfa";
    s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"18\" fill=\"{}\"/>\n", kLabelWidth, y,
                     x(v->estimate) - kLabelWidth, colour);
    s += fmt::format(
        "<line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{}\" y2=\"{}\" stroke=\"black\"/><line x1=\"{:.1f}\" x2=\"{:.1f}\" "
        "y1=\"{}\" y2=\"{}\" stroke=\"black\"/><line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{}\" y2=\"{}\" "
        "stroke=\"black\"/>\n",
        x(v->low), x(v->high), y + 9, y + 9, x(v->low), x(v->low), y + 4, y + 14, x(v->high), x(v->high), y + 4,
        y + 14);
    s += fmt::format("<text x=\"{:.1f}\" y=\"{}\">{:.1f}</text>\n", x(v->high) + 6, y + 14, v->estimate);
  }
  s += "</svg>\n";
  return s;
}

std::string cell(const std::optional<ConfidenceInterval>& i) {
  return i ? fmt::format("{:.2f} [{:.2f}, {:.2f}]", i->estimate, i->low, i->high) : "-";
}

std::string mib(const std::optional<int64_t>& bytes) {
  return bytes ? fmt::format("{:.1f}", static_cast<double>(*bytes) / (1024.0 * 1024.0)) : "-";
}

}  // namespace

void write_sweep_html(const SweepResult& r, const std::string& command, std::ostream& out) {
  out << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>stepscope sweep</title>\n"
         "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
         "td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}td:first-child{text-align:left}"
         ".best{background:#e8f5e9}</style></head><body>\n";
  out << "<h1>stepscope sweep</h1>\n<p>Command: <code>" << xml(command) << "</code></p>\n";
  out << fmt::format("<h2>{} per setting, with {:.0f}% bootstrap intervals</h2>\n",
                     r.best_by == "samples_per_sec" ? "Samples per second" : "Mean step time (ms)",
                     100 * r.confidence);
  out << svg_chart(r);
  out << "<table><tr><th>setting</th><th>runs</th><th>steady steps</th><th>samples/s</th><th>step ms</th>"
         "<th>host MiB</th><th>device MiB</th></tr>\n";
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const SweepRow& row = r.rows[i];
    out << fmt::format("<tr{}><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                       r.best == i ? " class=\"best\"" : "", xml(row.label), row.runs, row.steady_steps,
                       cell(row.samples_per_sec), cell(row.step_time_ms), mib(row.peak_host_bytes),
                       mib(row.peak_device_bytes));
  }
  out << "</table>\n";
  if (r.best) out << "<p>Best: <b>" << xml(r.rows[*r.best].label) << "</b></p>\n";
  out << "<p>Same seed, data and number of steps in every setting are the command's responsibility.</p>\n"
         "</body></html>\n";
}

}  // namespace stepscope
