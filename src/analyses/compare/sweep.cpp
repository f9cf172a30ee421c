#include "analyses/compare/sweep.hpp"

#include <algorithm>

namespace stepscope {

namespace {

constexpr double kNsPerMs = 1e6;
constexpr double kNsPerSec = 1e9;

std::optional<int64_t> peak(const std::vector<std::vector<StepRecord>>& repeats, int64_t StepRecord::*field) {
  std::optional<int64_t> best;
  for (const auto& steps : repeats) {
    for (const StepRecord& s : steps) {
      if (s.*field >= 0) best = std::max(best.value_or(0), s.*field);
    }
  }
  return best;
}

SweepRow summarize_setting(const SweepSettingRuns& setting, const BootstrapOptions& options) {
  SweepRow row;
  row.label = setting.label;
  row.runs = setting.repeats.size();
  row.failed_runs = setting.failed_runs;
  // Steady steps of all repeats, pooled: each repeat drops its own warm-up.
  std::vector<RatioPoint> times, rates;
  bool all_have_samples = true;
  for (const auto& steps : setting.repeats) {
    for (const StepRecord& s : steps) {
      if (s.warmup) continue;
      times.push_back({static_cast<double>(s.time_ns()) / kNsPerMs, 1});
      if (s.samples >= 0 && s.time_ns() > 0) {
        rates.push_back({static_cast<double>(s.samples), static_cast<double>(s.time_ns()) / kNsPerSec});
      } else {
        all_have_samples = false;
      }
    }
  }
  row.steady_steps = times.size();
  if (!times.empty()) row.step_time_ms = bootstrap_ratio(times, options);
  if (!rates.empty() && all_have_samples) row.samples_per_sec = bootstrap_ratio(rates, options);
  row.peak_host_bytes = peak(setting.repeats, &StepRecord::host_peak_bytes);
  row.peak_device_bytes = peak(setting.repeats, &StepRecord::device_peak_bytes);
  return row;
}

}  // namespace

SweepResult summarize_sweep(const std::vector<SweepSettingRuns>& settings, const BootstrapOptions& options) {
  SweepResult out;
  out.confidence = options.confidence;
  for (const SweepSettingRuns& s : settings) out.rows.push_back(summarize_setting(s, options));
  bool by_samples = std::all_of(out.rows.begin(), out.rows.end(),
                                [](const SweepRow& r) { return r.samples_per_sec || !r.step_time_ms; });
  out.best_by = by_samples ? "samples_per_sec" : "step_time";
  for (size_t i = 0; i < out.rows.size(); ++i) {
    const SweepRow& r = out.rows[i];
    if (!r.step_time_ms) continue;
    if (!out.best) {
      out.best = i;
      continue;
    }
    const SweepRow& b = out.rows[*out.best];
    bool better = by_samples ? r.samples_per_sec->estimate > b.samples_per_sec->estimate
                             : r.step_time_ms->estimate < b.step_time_ms->estimate;
    if (better) out.best = i;
  }
  return out;
}

}  // namespace stepscope
