#include "analyses/live_steps.hpp"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "analyses/steps/phase_claims.hpp"
#include "analyses/steps/phase_index.hpp"

namespace stepscope {

namespace {

constexpr double kSecondsPerNs = 1e-9;
// Phase spans a thread keeps waiting for its step. A thread whose phases never
// end in a step of its own (a loop that only reads its DataLoader, phases on
// another thread than the steps) would otherwise keep them all: the oldest half
// goes when a list passes this, long after any step could still claim them.
constexpr size_t kMaxPendingPhaseSpans = 4096;

constexpr std::array<std::string_view, 4> kStepCounters = {"step_samples", "step_tokens", "step_peak_rss",
                                                           "step_peak_device_memory"};

}  // namespace

void LiveSteps::update(const Run& run) {
  // Counters first: a step's counters arrive with its span, and the step looks them up.
  next_counter_ = std::max(next_counter_, run.counter_values_dropped);
  for (; next_counter_ < run.counter_values_dropped + run.counter_values.size(); ++next_counter_) {
    take_counter(run, run.counter_values[next_counter_ - run.counter_values_dropped]);
  }
  for (; next_span_ < run.spans.size(); ++next_span_) {
    const Span& span = run.spans[next_span_];
    if (span.end_ns < span.start_ns) continue;
    if (span.kind == SpanKind::kStep) {
      take_step(span);
    } else if (measured_phase(span.kind)) {
      take_phase(span);
    }
  }
}

void LiveSteps::take_counter(const Run& run, const CounterValue& value) {
  const CounterTrack& track = run.counter_tracks.at(value.track);
  const std::string& name = run.strings.get(track.name);
  if (std::find(kStepCounters.begin(), kStepCounters.end(), name) == kStepCounters.end()) return;
  step_counters_[name][{track.pid, value.ts_ns}] = std::llround(value.value);
}

void LiveSteps::take_phase(const Span& span) {
  auto phase = static_cast<size_t>(*measured_phase(span.kind));
  Intervals& pending = pending_phases_[{span.pid, span.tid}][phase];
  if (pending.size() >= kMaxPendingPhaseSpans) pending.erase(pending.begin(), pending.begin() + kMaxPendingPhaseSpans / 2);
  pending.push_back({span.start_ns, span.end_ns});
}

void LiveSteps::take_step(const Span& step) {
  LiveProcessSteps& p = processes_[step.pid];
  p.pid = step.pid;
  double seconds = static_cast<double>(step.end_ns - step.start_ns) * kSecondsPerNs;
  ++p.steps;
  p.step_seconds += seconds;
  for (size_t i = 0; i < kStepSecondsBuckets.size(); ++i) p.bucket_steps[i] += seconds <= kStepSecondsBuckets[i];
  p.last_step_end_ns = std::max(p.last_step_end_ns, step.end_ns);

  // The phases claim the step's time in order; "other" is the rest. Phase
  // spans of this thread that end inside the step are used up.
  PhaseClaims claims;
  int64_t claimed = 0;
  auto& pending = pending_phases_[{step.pid, step.tid}];
  for (size_t i = 0; i < static_cast<size_t>(StepPhase::kOther); ++i) {
    int64_t ns = claims.claim(clip_disjoint(merge_unsorted(pending[i]), step.start_ns, step.end_ns));
    p.phase_seconds[i] += static_cast<double>(ns) * kSecondsPerNs;
    claimed += ns;
    std::erase_if(pending[i], [&](const Interval& s) { return s.end_ns <= step.end_ns; });
  }
  p.phase_seconds[static_cast<size_t>(StepPhase::kOther)] +=
      static_cast<double>(std::max<int64_t>(0, step.end_ns - step.start_ns - claimed)) * kSecondsPerNs;

  auto counter = [&](std::string_view name) -> std::optional<int64_t> {
    auto series = step_counters_.find(name);
    if (series == step_counters_.end()) return std::nullopt;
    auto it = series->second.find({step.pid, step.end_ns});
    if (it == series->second.end()) return std::nullopt;
    int64_t value = it->second;
    series->second.erase(it);
    return value >= 0 ? std::optional(value) : std::nullopt;  // -1: not measured
  };
  if (auto samples = counter("step_samples")) p.samples = p.samples.value_or(0) + *samples;
  if (auto tokens = counter("step_tokens")) p.tokens = p.tokens.value_or(0) + *tokens;
  if (auto host = counter("step_peak_rss")) p.last_host_peak_bytes = *host;
  if (auto device = counter("step_peak_device_memory")) p.last_device_peak_bytes = *device;
}

}  // namespace stepscope
