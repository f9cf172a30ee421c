#include "renderers/report/ops_text.hpp"

#include <fmt/format.h>

#include "renderers/escape.hpp"
#include "renderers/fitted_name.hpp"

namespace stepscope {

namespace {

// torch's table prints times with a unit picked per value.
std::string time_text(double ns) {
  double magnitude = ns < 0 ? -ns : ns;
  if (magnitude >= 1e9) return fmt::format("{:.3f}s", ns / 1e9);
  if (magnitude >= 1e6) return fmt::format("{:.3f}ms", ns / 1e6);
  return fmt::format("{:.3f}us", ns / 1e3);
}

std::string percent(int64_t part, int64_t whole) {
  return whole ? fmt::format("{:.2f}%", 100.0 * static_cast<double>(part) / static_cast<double>(whole)) : "-";
}

}  // namespace

void write_ops_text(const Run& run, const OpsAnalysis& ops, std::ostream& out, size_t top) {
  if (ops.ops.empty()) return;
  bool device = ops.self_device_total_ns > 0;
  out << fmt::format("\nOperators (torch key_averages semantics, {} rows{}, top {} by self {} time)\n",
                     ops.ops.size(), ops.grouped_by_input_shapes ? " by input shapes" : "",
                     std::min(top, ops.ops.size()), device ? "device" : "CPU");
  std::string header = fmt::format("  {:<50} {:>9} {:>12} {:>12} {:>12}", "Name", "Self CPU %", "Self CPU",
                                   "CPU total", "CPU avg");
  if (device) header += fmt::format(" {:>12} {:>12} {:>9}", "Self device", "Device total", "Device %");
  header += fmt::format(" {:>8}", "Calls");
  if (ops.grouped_by_input_shapes) header += "  Input shapes";
  out << header << '\n';
  for (size_t i = 0; i < ops.ops.size() && i < top; ++i) {
    const OpStats& op = ops.ops[i];
    double avg = op.calls ? static_cast<double>(op.cpu_total_ns) / static_cast<double>(op.calls) : 0;
    std::string line = fmt::format("  {:<50} {:>9} {:>12} {:>12} {:>12}", fitted_name(op.name, 50),
                                   percent(op.self_cpu_ns, ops.self_cpu_total_ns),
                                   time_text(static_cast<double>(op.self_cpu_ns)),
                                   time_text(static_cast<double>(op.cpu_total_ns)), time_text(avg));
    if (device) {
      line += fmt::format(" {:>12} {:>12} {:>9}", time_text(static_cast<double>(op.self_device_ns)),
                          time_text(static_cast<double>(op.device_total_ns)),
                          percent(op.self_device_ns, ops.self_device_total_ns));
    }
    line += fmt::format(" {:>8}", op.calls);
    if (ops.grouped_by_input_shapes) line += "  " + printable_shortened(run.strings.get(op.input_shapes), 80);
    out << line << '\n';
  }
  out << fmt::format("  Self CPU time total: {}", time_text(static_cast<double>(ops.self_cpu_total_ns)));
  if (device) out << fmt::format(", self device time total: {}", time_text(static_cast<double>(ops.self_device_total_ns)));
  out << '\n';
}

}  // namespace stepscope
