#include "analyses/compare/compare.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

#include <fmt/format.h>

#include "analyses/compare/sections.hpp"
#include "util/error.hpp"

namespace stepscope {

namespace {

constexpr double kNsPerMs = 1e6;
constexpr double kNsPerSec = 1e9;
constexpr size_t kMinimumSteps = 2;

using StepValue = std::function<std::optional<RatioPoint>(const StepRecord&)>;

struct MetricSpec {
  const char* name;
  const char* unit;
  bool higher_is_better;
  StepValue value;  // nullopt: the step does not know this value
};

std::optional<RatioPoint> per_second(int64_t amount, const StepRecord& s) {
  if (amount < 0 || s.time_ns() <= 0) return std::nullopt;
  return RatioPoint{static_cast<double>(amount), static_cast<double>(s.time_ns()) / kNsPerSec};
}

std::vector<MetricSpec> headline_specs() {
  return {
      {"step_time", "ms", false,
       [](const StepRecord& s) { return RatioPoint{static_cast<double>(s.time_ns()) / kNsPerMs, 1}; }},
      {"samples_per_sec", "samples/s", true, [](const StepRecord& s) { return per_second(s.samples, s); }},
      {"tokens_per_sec", "tokens/s", true, [](const StepRecord& s) { return per_second(s.tokens, s); }},
  };
}

std::vector<MetricSpec> phase_specs() {
  std::vector<MetricSpec> out;
  static const char* const kNames[kStepPhaseCount] = {"data_wait", "forward", "backward", "optimizer", "other"};
  for (size_t i = 0; i < kStepPhaseCount; ++i) {
    out.push_back({kNames[i], "ms", false, [i](const StepRecord& s) {
                     return RatioPoint{static_cast<double>(s.phase_ns[i]) / kNsPerMs, 1};
                   }});
  }
  return out;
}

std::vector<RatioPoint> points(const std::vector<StepRecord>& steps, const StepValue& value) {
  std::vector<RatioPoint> out;
  for (const StepRecord& s : steps) {
    if (auto p = value(s)) out.push_back(*p);
  }
  return out;
}

std::optional<MetricComparison> compare_metric(const MetricSpec& spec, const std::vector<StepRecord>& base,
                                               const std::vector<StepRecord>& cur, const CompareOptions& options,
                                               std::vector<std::string>& notes) {
  std::vector<RatioPoint> b = points(base, spec.value), c = points(cur, spec.value);
  if (b.size() < kMinimumSteps || c.size() < kMinimumSteps) return std::nullopt;
  if (ratio_of_sums(b) == 0) {
    // Nothing to be relative to (a phase the base run did not have).
    if (ratio_of_sums(c) != 0) {
      notes.push_back(fmt::format("{}: 0 {} in BASE, {:.3f} {} in CUR; no relative change", spec.name, spec.unit,
                                  ratio_of_sums(c), spec.unit));
    }
    return std::nullopt;
  }
  MetricComparison m;
  m.name = spec.name;
  m.unit = spec.unit;
  m.higher_is_better = spec.higher_is_better;
  m.base = ratio_of_sums(b);
  m.cur = ratio_of_sums(c);
  m.base_steps = b.size();
  m.cur_steps = c.size();
  m.change = bootstrap_relative_change(b, c, options.bootstrap);
  m.p_value = permutation_p_value(b, c, options.bootstrap.resamples, options.bootstrap.seed);
  m.verdict = decide(m.change, m.p_value, 1 - options.bootstrap.confidence, m.higher_is_better,
                     options.threshold);
  return m;
}

// Peak memory is a maximum, which a bootstrap estimates badly, and it hardly
// varies between runs of one program: compared as a plain number.
std::optional<MetricComparison> compare_peak(const char* name, int64_t StepRecord::*field,
                                             const std::vector<StepRecord>& base, const std::vector<StepRecord>& cur,
                                             double threshold) {
  auto peak = [&](const std::vector<StepRecord>& steps) {
    std::optional<int64_t> best;
    for (const StepRecord& s : steps) {
      if (s.*field >= 0) best = std::max(best.value_or(0), s.*field);
    }
    return best;
  };
  auto b = peak(base), c = peak(cur);
  if (!b || !c || *b <= 0) return std::nullopt;
  MetricComparison m;
  m.name = name;
  m.unit = "bytes";
  m.base = static_cast<double>(*b);
  m.cur = static_cast<double>(*c);
  m.base_steps = base.size();
  m.cur_steps = cur.size();
  double change = m.cur / m.base - 1;
  m.change = {change, change, change};
  m.verdict = decide(m.change, std::nullopt, 0, false, threshold);
  return m;
}

size_t warmup_of(const CompareSide& side, const CompareOptions& options) {
  if (options.skip) return std::min(*options.skip, side.steps.size());
  return static_cast<size_t>(std::count_if(side.steps.begin(), side.steps.end(),
                                           [](const StepRecord& s) { return s.warmup; }));
}

std::vector<StepRecord> steady_steps(const CompareSide& side, size_t skip, const char* which) {
  if (side.steps.size() < skip + kMinimumSteps) {
    throw InputError(fmt::format(
        "{} ({}): {} steps, {} after leaving out {} warm-up steps; compare needs at least {} "
        "(record more steps, or lower --skip)",
        which, side.label, side.steps.size(), side.steps.size() - std::min(skip, side.steps.size()), skip,
        kMinimumSteps));
  }
  return {side.steps.begin() + static_cast<std::ptrdiff_t>(skip), side.steps.end()};
}

StepWindow window_of(const std::vector<StepRecord>& steady) {
  return {steady.front().start_ns, steady.back().end_ns, steady.size()};
}

void mark_gating(std::vector<MetricComparison>& metrics, const std::vector<std::string>& gating) {
  for (MetricComparison& m : metrics) {
    m.gating = std::find(gating.begin(), gating.end(), m.name) != gating.end();
  }
}

}  // namespace

const char* verdict_name(Verdict verdict) {
  switch (verdict) {
    case Verdict::kImproved:
      return "improved";
    case Verdict::kRegressed:
      return "regressed";
    case Verdict::kWithinThreshold:
      return "within threshold";
    case Verdict::kInconclusive:
      return "inconclusive";
    case Verdict::kNoSignificantChange:
      break;
  }
  return "no significant change";
}

Verdict decide(const ConfidenceInterval& change, std::optional<double> p_value, double alpha, bool higher_is_better,
               double threshold) {
  bool significant = p_value ? *p_value < alpha : change.estimate != 0;
  if (!significant) return Verdict::kNoSignificantChange;
  // The interval as "how much worse": positive is a regression.
  double least_worse = higher_is_better ? -change.high : change.low;
  double most_worse = higher_is_better ? -change.low : change.high;
  if (least_worse > threshold) return Verdict::kRegressed;
  if (most_worse < -threshold) return Verdict::kImproved;
  if (least_worse >= -threshold && most_worse <= threshold) return Verdict::kWithinThreshold;
  return Verdict::kInconclusive;
}

bool CompareResult::regressed() const {
  auto gated_regression = [](const MetricComparison& m) { return m.gating && m.verdict == Verdict::kRegressed; };
  return std::any_of(metrics.begin(), metrics.end(), gated_regression) ||
         std::any_of(phases.begin(), phases.end(), gated_regression);
}

std::vector<std::string> compare_metric_names() {
  std::vector<std::string> out;
  for (const MetricSpec& s : headline_specs()) out.emplace_back(s.name);
  out.emplace_back("peak_memory");
  out.emplace_back("peak_device_memory");
  for (const MetricSpec& s : phase_specs()) out.emplace_back(s.name);
  return out;
}

CompareResult compare_runs(const CompareSide& base, const CompareSide& cur, const CompareOptions& options) {
  std::vector<std::string> gating = options.gating_metrics.empty() ? kDefaultGatingMetrics : options.gating_metrics;
  std::vector<std::string> known = compare_metric_names();
  for (const std::string& name : gating) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      throw InputError(fmt::format("unknown metric '{}'; known: {}", name, fmt::join(known, ", ")));
    }
  }
  CompareResult out;
  out.base_label = base.label;
  out.cur_label = cur.label;
  out.base_origin = base.origin;
  out.cur_origin = cur.origin;
  out.base_steps = base.steps.size();
  out.cur_steps = cur.steps.size();
  out.base_skipped = warmup_of(base, options);
  out.cur_skipped = warmup_of(cur, options);
  out.threshold = options.threshold;
  out.confidence = options.bootstrap.confidence;
  out.resamples = options.bootstrap.resamples;
  out.seed = options.bootstrap.seed;
  std::vector<StepRecord> b = steady_steps(base, out.base_skipped, "BASE");
  std::vector<StepRecord> c = steady_steps(cur, out.cur_skipped, "CUR");

  for (const MetricSpec& spec : headline_specs()) {
    if (auto m = compare_metric(spec, b, c, options, out.notes)) out.metrics.push_back(std::move(*m));
  }
  // Memory peaks over all steps: warm-up is when memory grows.
  if (auto m = compare_peak("peak_memory", &StepRecord::host_peak_bytes, base.steps, cur.steps, options.threshold)) {
    out.metrics.push_back(std::move(*m));
  }
  if (auto m = compare_peak("peak_device_memory", &StepRecord::device_peak_bytes, base.steps, cur.steps,
                            options.threshold)) {
    out.metrics.push_back(std::move(*m));
  }
  if (base.has_phases && cur.has_phases) {
    for (const MetricSpec& spec : phase_specs()) {
      if (auto m = compare_metric(spec, b, c, options, out.notes)) {
        out.phases.push_back(std::move(*m));
      }
    }
  } else {
    out.notes.push_back("step phases are compared only when both sides were recorded with the hooks");
  }
  mark_gating(out.metrics, gating);
  mark_gating(out.phases, gating);
  // A metric asked for by name must be there: a CI gate on a metric that is
  // silently missing would always pass.
  for (const std::string& name : options.gating_metrics) {
    auto has = [&](const MetricComparison& m) { return m.name == name; };
    if (std::none_of(out.metrics.begin(), out.metrics.end(), has) &&
        std::none_of(out.phases.begin(), out.phases.end(), has)) {
      throw InputError(fmt::format("metric {} is not known for at least 2 steady steps of both {} and {}", name,
                                   base.label, cur.label));
    }
  }
  if (base.run && cur.run) {
    out.sections = compare_sections(*base.run, window_of(b), *cur.run, window_of(c), options.top);
  } else {
    out.notes.push_back("functions, operators and kernels are compared only between two run files");
  }
  return out;
}

}  // namespace stepscope
