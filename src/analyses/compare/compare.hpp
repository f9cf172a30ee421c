// Before/after with statistics: per-metric relative change of CUR against
// BASE with a bootstrap confidence interval over per-step values, a verdict
// per metric, and beside the headline the diff of step phases and of named
// costs (functions, operators, kernels: what got slower).
//
// A regression is reported only when the change is statistically significant
// (permutation test, p below 1 - confidence) AND its whole confidence
// interval is worse than the threshold: a change no larger than the threshold
// is flagged with probability at most (1 - confidence) / 2.
// docs/compare.md describes the method and its limits.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analyses/compare/statistics.hpp"
#include "analyses/steps/steps.hpp"

namespace stepscope {

// One side of a comparison: the per-step values, and the run they came from
// when there is one (a baseline from the history store has only steps).
struct CompareSide {
  std::string label;   // file name, or "history #ID"
  std::string origin;  // where the steps came from: "hooks", "ProfilerStep spans", "history"
  std::vector<StepRecord> steps;  // all steps in time order, warm-up flagged
  bool has_phases = false;
  const Run* run = nullptr;
};

struct CompareOptions {
  double threshold = 0.05;                  // relative change that matters
  std::optional<size_t> skip;               // warm-up steps to drop; default: the steps' own flags
  std::vector<std::string> gating_metrics;  // empty: kDefaultGatingMetrics
  size_t top = 10;                          // rows per diff table
  BootstrapOptions bootstrap;
};

enum class Verdict { kImproved, kRegressed, kInconclusive, kWithinThreshold, kNoSignificantChange };
const char* verdict_name(Verdict verdict);

struct MetricComparison {
  std::string name;  // samples_per_sec, step_time, ...
  std::string unit;  // "samples/s", "ms", "bytes"
  bool higher_is_better = false;
  double base = 0, cur = 0;
  ConfidenceInterval change;  // relative, cur / base - 1, with its bootstrap interval
  std::optional<double> p_value;  // none for metrics compared as plain numbers (peak memory)
  size_t base_steps = 0, cur_steps = 0;
  Verdict verdict = Verdict::kNoSignificantChange;
  bool gating = false;  // counts toward the exit status
};

// Named costs side by side: a function's share of the profile, an operator's
// or kernel's time per step. Sections are independent: a new analysis adds
// one by filling a DiffTable (see compare/sections.hpp).
struct DiffRow {
  std::string name;  // raw bytes from the run: renderers escape it
  double base = 0, cur = 0;
};
struct DiffTable {
  std::string key;    // "functions", "ops", "kernels"
  std::string title;  // for people
  std::string unit;   // "%" or "ms/step"
  std::vector<DiffRow> rows;  // largest absolute difference first
};

struct CompareResult {
  std::string base_label, cur_label;
  std::string base_origin, cur_origin;
  size_t base_steps = 0, cur_steps = 0;        // all steps
  size_t base_skipped = 0, cur_skipped = 0;    // warm-up steps left out
  double threshold = 0, confidence = 0;
  uint32_t resamples = 0;
  uint64_t seed = 0;
  std::vector<MetricComparison> metrics;  // headline
  std::vector<MetricComparison> phases;   // ms per step of each phase (when both have phases)
  std::vector<DiffTable> sections;
  std::vector<std::string> notes;
  bool regressed() const;
};

inline const std::vector<std::string> kDefaultGatingMetrics = {
    "step_time", "samples_per_sec", "tokens_per_sec", "peak_memory", "peak_device_memory"};

// Names --metric accepts, headline and phase metrics.
std::vector<std::string> compare_metric_names();

// Throws InputError when a side has fewer than 2 steady steps or a gating
// metric is unknown.
CompareResult compare_runs(const CompareSide& base, const CompareSide& cur, const CompareOptions& options);

// The decision rule, on its own for tests. Significant: p_value < alpha, or
// for a metric without a p-value (its interval a point) any change at all.
// Then, by where the interval of `change` lies: wholly beyond the threshold
// in the worse direction, regressed; in the better one, improved; wholly
// within +-threshold, within threshold; across a threshold, inconclusive.
Verdict decide(const ConfidenceInterval& change, std::optional<double> p_value, double alpha, bool higher_is_better,
               double threshold);

}  // namespace stepscope
