// The summary of a sweep: per setting (one combination of parameter values),
// throughput and step time over the steady steps of all its repeats, with
// bootstrap intervals, peak memory, and the best setting.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analyses/compare/statistics.hpp"
#include "analyses/steps/steps.hpp"

namespace stepscope {

struct SweepSettingRuns {
  std::string label;  // "num_workers=2 batch=8"
  std::vector<std::vector<StepRecord>> repeats;  // steps of each run, warm-up flagged
  size_t failed_runs = 0;  // runs that exited non-zero or recorded no steps
};

struct SweepRow {
  std::string label;
  size_t runs = 0, steady_steps = 0, failed_runs = 0;
  std::optional<ConfidenceInterval> samples_per_sec;
  std::optional<ConfidenceInterval> step_time_ms;
  std::optional<int64_t> peak_host_bytes, peak_device_bytes;
};

struct SweepResult {
  std::vector<SweepRow> rows;  // in the order of the settings
  std::optional<size_t> best;
  std::string best_by;  // "samples_per_sec" (highest) or "step_time" (lowest)
  double confidence = 0;
};

SweepResult summarize_sweep(const std::vector<SweepSettingRuns>& settings, const BootstrapOptions& options);

}  // namespace stepscope
