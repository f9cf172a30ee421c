#include "renderers/compare/sweep_text.hpp"

#include <fmt/format.h>

#include "renderers/escape.hpp"

namespace stepscope {

namespace {

std::string with_interval(const std::optional<ConfidenceInterval>& i, const char* format) {
  if (!i) return "-";
  return fmt::format("{} [{}, {}]", fmt::format(fmt::runtime(format), i->estimate),
                     fmt::format(fmt::runtime(format), i->low), fmt::format(fmt::runtime(format), i->high));
}

std::string mib(const std::optional<int64_t>& bytes) {
  return bytes ? fmt::format("{:.1f}", static_cast<double>(*bytes) / (1024.0 * 1024.0)) : "-";
}

}  // namespace

void write_sweep_text(const SweepResult& r, std::ostream& out) {
  out << fmt::format("{:<32} {:>5} {:>7} {:>32} {:>28} {:>9} {:>9}\n", "setting", "runs", "steps",
                     fmt::format("samples/s [{:.0f}% interval]", 100 * r.confidence), "step ms [interval]",
                     "host MiB", "dev MiB");
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const SweepRow& row = r.rows[i];
    std::string runs = row.failed_runs ? fmt::format("{}!{}", row.runs, row.failed_runs) : std::to_string(row.runs);
    out << fmt::format("{:<32} {:>5} {:>7} {:>32} {:>28} {:>9} {:>9}{}\n", printable_utf8(row.label), runs,
                       row.steady_steps, with_interval(row.samples_per_sec, "{:.1f}"),
                       with_interval(row.step_time_ms, "{:.2f}"), mib(row.peak_host_bytes),
                       mib(row.peak_device_bytes), r.best == i ? "  <- best" : "");
  }
  if (r.best) {
    out << fmt::format("\nbest: {} (by {}, steady steps of all its runs)\n", printable_utf8(r.rows[*r.best].label),
                       r.best_by == "samples_per_sec" ? "highest samples/s" : "lowest mean step time");
  } else {
    out << "\nno setting recorded steps\n";
  }
  out << "Same seed, data and number of steps in every setting are the command's responsibility; "
         "overlapping intervals mean the settings are not told apart.\n";
}

}  // namespace stepscope
