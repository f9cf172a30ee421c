#include "renderers/report/diagnosis_text.hpp"

#include <fmt/format.h>

#include "renderers/escape.hpp"

namespace stepscope {

namespace {

constexpr size_t kWidth = 100;

// Words of `text` in lines of at most kWidth columns (counting bytes; names
// are rarely wide), each after `indent`; the first line after `first`.
std::string wrapped(std::string_view text, std::string_view first, std::string_view indent) {
  std::string out(first), word;
  size_t column = first.size();
  bool line_empty = true;
  auto flush_word = [&] {
    if (word.empty()) return;
    if (!line_empty && column + 1 + word.size() > kWidth) {
      out += '\n';
      out += indent;
      column = indent.size();
      line_empty = true;
    }
    if (!line_empty) {
      out += ' ';
      ++column;
    }
    out += word;
    column += word.size();
    line_empty = false;
    word.clear();
  };
  for (char c : text) {
    if (c == ' ') {
      flush_word();
    } else {
      word += c;
    }
  }
  flush_word();
  return out + '\n';
}

std::string severity_label(Severity severity, const TextStyle& style) {
  std::string label = fmt::format("{:<6}", severity_name(severity));
  switch (severity) {
    case Severity::kHigh:
      return style.red(label);
    case Severity::kMedium:
      return style.yellow(label);
    case Severity::kLow:
      break;
  }
  return style.cyan(label);
}

std::string gain(const Finding& f) {
  if (!f.impact.empty()) return f.impact;
  return f.expected_speedup ? fmt::format("up to {:.2f}x faster", *f.expected_speedup) : "a risk, not a cost in time";
}

}  // namespace

void write_verdict(const Diagnosis& diagnosis, const TextStyle& style, std::ostream& out) {
  if (diagnosis.findings.empty()) {
    std::string why = diagnosis.note.empty()
                          ? "no rule found a known bottleneck (docs/diagnosis.md lists what they look for)"
                          : diagnosis.note;
    std::string text = wrapped(printable_utf8(why), "Verdict: ", "  ");
    out << '\n' << style.bold("Verdict:") << text.substr(std::string_view("Verdict:").size());
    return;
  }
  const Finding& top = diagnosis.findings.front();
  out << '\n'
      << style.bold("Verdict: " + printable_utf8(top.title)) << " " << style.dim("(" + gain(top) + ")") << '\n';
}

void write_findings(const Diagnosis& diagnosis, const TextStyle& style, std::ostream& out, size_t detailed) {
  if (diagnosis.findings.empty()) return;
  out << '\n' << style.bold(fmt::format("Findings, best first ({})", diagnosis.findings.size())) << '\n';
  for (size_t i = 0; i < diagnosis.findings.size(); ++i) {
    const Finding& f = diagnosis.findings[i];
    out << fmt::format("  {}. ", i + 1) << severity_label(f.severity, style) << ' ' << style.bold(f.id) << "  "
        << gain(f) << '\n';
    if (i >= detailed) continue;
    out << wrapped(printable_utf8(f.title), "     ", "     ");
    for (const std::string& e : f.evidence) out << wrapped(printable_utf8(e), "     - ", "       ");
    out << style.green(wrapped(printable_utf8(f.recommendation), "     -> ", "        "));
  }
}

}  // namespace stepscope
