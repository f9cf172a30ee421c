#include "analyses/steps/steps.hpp"

#include "analyses/device/activity.hpp"
#include "analyses/ranks.hpp"
#include "analyses/recent_answers.hpp"
#include "analyses/spans/intervals.hpp"
#include "analyses/spans/string_match.hpp"
#include "analyses/steps/collective_wait.hpp"
#include "analyses/steps/phase_claims.hpp"
#include "analyses/steps/phase_index.hpp"
#include "analyses/steps/profiler_steps.hpp"
#include "analyses/steps/trace_steps.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <span>
#include <unordered_map>
#include <string>
#include <utility>

#include <fmt/format.h>

namespace stepscope {

namespace {

constexpr double kMsPerNs = 1e-6;

// Time of `spans` inside [start, end).
int64_t overlap_ns(const Intervals& spans, int64_t start, int64_t end) {
  auto it = std::lower_bound(spans.begin(), spans.end(), Interval{start, 0});
  if (it != spans.begin()) --it;  // one that starts before may reach in
  int64_t total = 0;
  for (; it != spans.end() && it->start_ns < end; ++it) {
    total += std::max<int64_t>(0, std::min(end, it->end_ns) - std::max(start, it->start_ns));
  }
  return total;
}

// The hooks' per-step counters (step_samples, step_peak_rss, ...), a series
// per name and process, each by time: a step's value is the one at its end.
class StepCounters {
 public:
  using Series = std::vector<std::pair<int64_t, int64_t>>;  // (ts, value), by ts

  explicit StepCounters(const Run& run) {
    std::vector<Series*> series_of_track(run.counter_tracks.size(), nullptr);  // asked once per track
    for (size_t t = 0; t < run.counter_tracks.size(); ++t) {
      const std::string& name = run.strings.get(run.counter_tracks[t].name);
      if (name.starts_with("step_")) series_of_track[t] = &series_[{name, run.counter_tracks[t].pid}];
    }
    for (const CounterValue& v : run.counter_values) {
      if (Series* series = series_of_track.at(v.track)) series->emplace_back(v.ts_ns, std::llround(v.value));
    }
    for (auto& [key, series] : series_) {
      std::stable_sort(series.begin(), series.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    }
  }

  // Null when the process has no such counter.
  const Series* find(const std::string& name, int64_t pid) const {
    auto found = series_.find({name, pid});
    return found == series_.end() ? nullptr : &found->second;
  }

  // The value at `ts` (the last written there), or -1.
  static int64_t at(const Series* series, int64_t ts) {
    if (!series) return -1;
    auto after = std::upper_bound(series->begin(), series->end(), ts,
                                  [](int64_t t, const std::pair<int64_t, int64_t>& v) { return t < v.first; });
    if (after == series->begin() || std::prev(after)->first != ts) return -1;
    return std::prev(after)->second;
  }

 private:
  std::map<std::pair<std::string, int64_t>, Series> series_;
};

// The hooks' phases claim time in the order of phase_at: data wait, forward,
// backward, then the optimizer, whose span holds the forward and backward of a
// closure optimizer.
void fill_phases(StepRecord& step, const PhaseIndex::ThreadPhases* phases, PhaseClaims& claims) {
  int64_t measured = 0;
  if (phases) {
    claims.clear();
    for (StepPhase phase : {StepPhase::kDataWait, StepPhase::kForward, StepPhase::kBackward, StepPhase::kOptimizer}) {
      auto p = static_cast<size_t>(phase);
      step.phase_ns[p] = claims.claim((*phases)[p], step.start_ns, step.end_ns);
      measured += step.phase_ns[p];
    }
  }
  step.phase_ns[static_cast<size_t>(StepPhase::kOther)] = std::max<int64_t>(0, step.time_ns() - measured);
}

double percentile(const std::vector<int64_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  double rank = q * static_cast<double>(sorted.size() - 1);
  size_t low = static_cast<size_t>(std::floor(rank));
  size_t high = std::min(low + 1, sorted.size() - 1);
  double frac = rank - static_cast<double>(low);
  return (static_cast<double>(sorted[low]) * (1 - frac) + static_cast<double>(sorted[high]) * frac) * kMsPerNs;
}

std::vector<HistogramBin> histogram(const std::vector<int64_t>& sorted, size_t bins) {
  if (sorted.empty() || bins == 0) return {};
  double low = static_cast<double>(sorted.front()) * kMsPerNs;
  double high = static_cast<double>(sorted.back()) * kMsPerNs;
  if (high <= low) return {{low, high, sorted.size()}};
  double width = (high - low) / static_cast<double>(bins);
  std::vector<HistogramBin> out(bins);
  for (size_t i = 0; i < bins; ++i) out[i] = {low + width * static_cast<double>(i), low + width * static_cast<double>(i + 1), 0};
  for (int64_t ns : sorted) {
    auto bin = static_cast<size_t>((static_cast<double>(ns) * kMsPerNs - low) / width);
    ++out[std::min(bin, bins - 1)].count;
  }
  return out;
}

std::optional<double> rate(std::span<const StepRecord> steady, int64_t StepRecord::*field) {
  int64_t amount = 0, ns = 0;
  for (const StepRecord& s : steady) {
    if (s.*field < 0) continue;
    amount += s.*field;
    ns += s.time_ns();
  }
  if (ns <= 0) return std::nullopt;
  return static_cast<double>(amount) / (static_cast<double>(ns) / 1e9);
}

std::optional<int64_t> peak(const std::vector<StepRecord>& steps, int64_t StepRecord::*field) {
  std::optional<int64_t> best;
  for (const StepRecord& s : steps) {
    if (s.*field >= 0) best = std::max(best.value_or(0), s.*field);
  }
  return best;
}

void summarize(ProcessSteps& p, size_t bins) {
  p.warmup_steps = warmup_step_count(p.steps.size());
  for (size_t i = 0; i < p.warmup_steps; ++i) p.steps[i].warmup = true;
  std::span<const StepRecord> steady = std::span<const StepRecord>(p.steps).subspan(p.warmup_steps);
  p.samples_per_sec = rate(steady, &StepRecord::samples);
  p.tokens_per_sec = rate(steady, &StepRecord::tokens);
  std::vector<int64_t> times;
  times.reserve(steady.size());
  int64_t total = 0;
  std::array<int64_t, kStepPhaseCount> phase_total{};
  for (const StepRecord& s : steady) {
    times.push_back(s.time_ns());
    total += s.time_ns();
    for (size_t i = 0; i < kStepPhaseCount; ++i) phase_total[i] += s.phase_ns[i];
  }
  std::sort(times.begin(), times.end());
  p.step_time = {percentile(times, 0.5), percentile(times, 0.9), percentile(times, 0.99),
                 times.empty() ? 0 : static_cast<double>(total) * kMsPerNs / static_cast<double>(times.size())};
  p.histogram = histogram(times, bins);
  for (size_t i = 0; i < kStepPhaseCount; ++i) {
    p.phase_fractions[i] = total > 0 ? static_cast<double>(phase_total[i]) / static_cast<double>(total) : 0;
  }
  p.peak_host_bytes = peak(p.steps, &StepRecord::host_peak_bytes);
  p.peak_device_bytes = peak(p.steps, &StepRecord::device_peak_bytes);
}

// Ranked processes first, by rank; the others by pid.
void order_by_rank(std::vector<ProcessSteps>& processes) {
  std::stable_sort(processes.begin(), processes.end(), [](const ProcessSteps& a, const ProcessSteps& b) {
    if (a.rank.has_value() != b.rank.has_value()) return a.rank.has_value();
    return a.rank.value_or(0) < b.rank.value_or(0);
  });
}

// A trace's steps: throughput and memory unknown (the trace has neither
// batch sizes nor per-step peaks); the rank is the trace's.
std::vector<ProcessSteps> collect_trace_processes(const Run& run, const StepsOptions& options,
                                                 const std::vector<const Span*>& profiler_steps) {
  std::vector<ProcessSteps> out;
  std::optional<int64_t> rank = trace_rank(run);
  for (TraceProcessSteps& t : trace_steps(run, profiler_steps)) {
    ProcessSteps& p = out.emplace_back();
    p.pid = t.pid;
    p.rank = rank;
    p.steps = std::move(t.steps);
    p.profiler_ranges = t.ranges;
    p.last_range_left_out = t.last_left_out;
    p.loader_iterator = std::move(t.loader_iterator);
    summarize(p, options.histogram_bins);
  }
  order_by_rank(out);
  return out;
}

// The hooks' step spans by process, in no order; `census` null: found by a
// pass over the spans.
std::map<int64_t, std::vector<const Span*>> hooked_steps(const Run& run, const SpanCensus* census) {
  std::map<int64_t, std::vector<const Span*>> steps_by_pid;
  auto add = [&](const Span& s) {
    if (s.kind == SpanKind::kStep && s.end_ns >= s.start_ns) steps_by_pid[s.pid].push_back(&s);
  };
  if (census) {
    for (SpanId id : census->ids(SpanKind::kStep)) add(run.spans[id]);
  } else {
    for (const Span& s : run.spans) add(s);
  }
  return steps_by_pid;
}

std::vector<ProcessSteps> collect_processes(const Run& run, const StepsOptions& options, const PhaseIndex& phases,
                                            std::map<int64_t, std::vector<const Span*>> steps_by_pid) {
  StepCounters counters(run);
  std::vector<ProcessSteps> out;
  for (auto& [pid, spans] : steps_by_pid) {
    std::sort(spans.begin(), spans.end(), [](const Span* a, const Span* b) { return a->end_ns < b->end_ns; });
    ProcessSteps& p = out.emplace_back();
    p.pid = pid;
    p.rank = process_rank(run, pid);
    p.host_peak_per_step = process_fact(run, pid, "rss_peak") == "per_step";
    const StepCounters::Series* samples = counters.find("step_samples", pid);
    const StepCounters::Series* tokens = counters.find("step_tokens", pid);
    const StepCounters::Series* host_peak = counters.find("step_peak_rss", pid);
    const StepCounters::Series* device_peak = counters.find("step_peak_device_memory", pid);
    PhaseClaims claims;
    for (const Span* span : spans) {
      StepRecord& step = p.steps.emplace_back();
      step.start_ns = span->start_ns;
      step.end_ns = span->end_ns;
      step.tid = span->tid;
      fill_phases(step, phases.find(pid, span->tid), claims);
      step.samples = StepCounters::at(samples, span->end_ns);
      step.tokens = StepCounters::at(tokens, span->end_ns);
      step.host_peak_bytes = StepCounters::at(host_peak, span->end_ns);
      step.device_peak_bytes = StepCounters::at(device_peak, span->end_ns);
    }
    summarize(p, options.histogram_bins);
  }
  order_by_rank(out);
  return out;
}

// Run-level figures describe rank 0, or without ranks the process with the
// most steps (the training process, not a helper that called step() once).
size_t pick_primary(const std::vector<ProcessSteps>& processes) {
  if (!processes.empty() && processes.front().rank) return 0;
  size_t best = 0;
  for (size_t i = 1; i < processes.size(); ++i) {
    if (processes[i].steps.size() > processes[best].steps.size()) best = i;
  }
  return best;
}

// --------------------------------------------------------- sample attribution

bool inside(const Intervals& spans, int64_t ts) { return overlap_ns(spans, ts, ts + 1) > 0; }

FrameId leaf_frame(const Run& run, StackId stack) { return run.stacks.node(stack).frame; }

std::vector<FunctionSamples> top_functions(const Run& run, const std::map<FrameId, uint64_t>& leaves,
                                           size_t top) {
  std::map<std::pair<StringId, StringId>, uint64_t> by_function;
  for (auto [frame, count] : leaves) {
    const Frame& f = run.frames.get(frame);
    by_function[{f.function, f.file}] += count;
  }
  std::vector<FunctionSamples> out;
  for (auto [key, count] : by_function) out.push_back({key.first, key.second, count});
  std::stable_sort(out.begin(), out.end(), [](const FunctionSamples& a, const FunctionSamples& b) {
    return a.samples > b.samples;
  });
  if (out.size() > top) out.resize(top);
  return out;
}

std::map<int64_t, Intervals> worker_batches(const Run& run) {
  std::map<int64_t, Intervals> out;
  std::vector<bool> worker_batch = strings_equal_to(run.strings, "worker_batch");
  for (const Span& s : run.spans) {
    if (s.kind == SpanKind::kOther && worker_batch[s.name]) {
      out[s.pid].push_back({s.start_ns, s.end_ns});
    }
  }
  for (auto& [pid, spans] : out) std::sort(spans.begin(), spans.end());
  return out;
}

// A process with steps as the walk over the samples sees it: its steps, and
// what its samples say of it as the primary.
struct StepsOfProcess {
  explicit StepsOfProcess(const ProcessSteps& p) : process(&p), finder(p) {}
  const ProcessSteps* process;
  StepFinder finder;
  StepSampleAttribution attribution;
  std::map<FrameId, uint64_t> wait_leaves;  // of its data waits' samples
};

// What one sample of processes[index] says: its step's phase, to the
// attribution (a sample with a stack) and to the collective waits.
void add_step_sample(const Run& run, PhaseFinder& phases, size_t index, StepsOfProcess& p, const Sample& s,
                     CollectiveWaits* waits) {
  const bool attributed = s.stack != StackTree::kRoot;  // an empty stack tells nothing of the step
  const StepRecord* step = p.finder.find(s.tid, s.ts_ns);
  if (!step) {
    if (attributed && !p.process->steps.empty() && p.process->steps.front().tid == s.tid) {
      ++p.attribution.outside_steps;
    }
    return;
  }
  std::optional<StepPhase> phase;
  if (attributed || (waits && waits->needs_phase(index, *step, s))) {
    phase = phases.phase_in_step(p.process->pid, s.tid, s.ts_ns);
  }
  if (waits) waits->add(index, *step, s, phase);
  if (!attributed) return;
  ++p.attribution.by_phase[static_cast<size_t>(*phase)];
  if (*phase == StepPhase::kDataWait) ++p.wait_leaves[leaf_frame(run, s.stack)];
}

// What a sample's process is to the attribution: a process with steps, a
// DataLoader worker (its batches), both, or neither.
struct SampleProcess {
  size_t steps = SIZE_MAX;            // into the processes with steps
  const Intervals* batches = nullptr;  // a worker's batches
};

// Each process with steps as if it were the primary, in one pass over the
// samples (a run of eight ranks is not walked eight times), which also
// counts the collective waits (`waits`, null for a trace's steps): `phases`
// null: a trace's steps, which have no phase spans.
std::vector<StepSampleAttribution> attribute_samples(const Run& run, const PhaseIndex* phases,
                                                     const std::vector<ProcessSteps>& processes, size_t top,
                                                     CollectiveWaits* waits) {
  if (run.samples.empty()) return std::vector<StepSampleAttribution>(processes.size());
  std::optional<PhaseIndex> built;
  if (!phases) phases = &built.emplace(run);
  std::map<int64_t, Intervals> workers = worker_batches(run);
  std::unordered_map<int64_t, SampleProcess> process_of;
  for (size_t i = 0; i < processes.size(); ++i) process_of[processes[i].pid].steps = i;
  for (const auto& [pid, batches] : workers) process_of[pid].batches = &batches;
  std::vector<StepsOfProcess> with_steps(processes.begin(), processes.end());
  PhaseFinder phase_finder(*phases);
  std::map<int64_t, std::map<FrameId, uint64_t>> worker_leaves;  // by worker
  RecentAnswers<int64_t, const SampleProcess*> recent_process;
  auto find_process = [&](int64_t pid) -> const SampleProcess* {
    auto found = process_of.find(pid);
    return found == process_of.end() ? nullptr : &found->second;
  };
  for (const Sample& s : run.samples) {
    const SampleProcess* found = recent_process.get(s.pid, find_process);
    if (!found) continue;
    const SampleProcess& p = *found;
    if (p.steps != SIZE_MAX) add_step_sample(run, phase_finder, p.steps, with_steps[p.steps], s, waits);
    // A worker's helper threads (tensor sharing, pinning) mostly sleep;
    // what its batches cost is in the threads that run.
    if (p.batches && s.stack != StackTree::kRoot && s.state != ThreadState::kIdle && inside(*p.batches, s.ts_ns)) {
      ++worker_leaves[s.pid][leaf_frame(run, s.stack)];
    }
  }
  std::vector<StepSampleAttribution> out;
  for (StepsOfProcess& p : with_steps) {
    std::map<FrameId, uint64_t> others;  // the workers' samples, the primary's own batches aside
    for (const auto& [pid, leaves] : worker_leaves) {
      if (pid == p.process->pid) continue;
      for (auto [frame, count] : leaves) others[frame] += count;
    }
    StepSampleAttribution& a = out.emplace_back(std::move(p.attribution));
    for (auto [frame, count] : p.wait_leaves) a.data_wait_samples += count;
    for (auto [frame, count] : others) a.worker_samples += count;
    a.data_wait_functions = top_functions(run, p.wait_leaves, top);
    a.worker_functions = top_functions(run, others, top);
  }
  return out;
}

}  // namespace

const char* step_phase_name(StepPhase phase) {
  switch (phase) {
    case StepPhase::kDataWait:
      return "data_wait";
    case StepPhase::kForward:
      return "forward";
    case StepPhase::kBackward:
      return "backward";
    case StepPhase::kOptimizer:
      return "optimizer";
    case StepPhase::kOther:
      break;
  }
  return "other";
}

size_t warmup_step_count(size_t steps) {
  if (steps < 2) return 0;
  return std::clamp<size_t>(steps / 10, 1, 10);
}

const char* steps_origin_name(StepsOrigin origin) {
  switch (origin) {
    case StepsOrigin::kHooks:
      return "hooks";
    case StepsOrigin::kProfilerSteps:
      return "profiler_steps";
    case StepsOrigin::kNone:
      break;
  }
  return "none";
}

namespace {

// `profiler_steps` null: found here, only when the run has no hooked steps.
StepsAnalysis analyze(const Run& run, const StepsOptions& options, const std::vector<const Span*>* profiler_steps,
                      const SpanCensus* census) {
  StepsAnalysis out;
  std::map<int64_t, std::vector<const Span*>> steps_by_pid = hooked_steps(run, census);
  std::optional<PhaseIndex> phases;  // a trace's steps: no phase index to build
  if (!steps_by_pid.empty()) {
    phases.emplace(run);
    out.processes = collect_processes(run, options, *phases, std::move(steps_by_pid));
  }
  out.origin = StepsOrigin::kHooks;
  if (out.processes.empty()) {
    out.processes =
        collect_trace_processes(run, options, profiler_steps ? *profiler_steps : profiler_step_spans(run));
    out.origin = StepsOrigin::kProfilerSteps;
  }
  if (out.processes.empty()) {
    out.origin = StepsOrigin::kNone;
    return out;
  }
  out.primary = pick_primary(out.processes);
  std::optional<CollectiveWaits> waits;  // of hooked steps
  if (phases) waits.emplace(run, out.processes);
  out.attributions = attribute_samples(run, phases ? &*phases : nullptr, out.processes, options.top_functions,
                                       waits ? &*waits : nullptr);
  if (waits) waits->store(out.processes);
  return out;
}

}  // namespace

const StepSampleAttribution& StepsAnalysis::attribution() const {
  static const StepSampleAttribution kNone;
  return primary < attributions.size() ? attributions[primary] : kNone;
}

StepsAnalysis with_primary(StepsAnalysis steps, size_t primary) {
  steps.primary = primary;
  return steps;
}

StepsAnalysis analyze_steps(const Run& run, const StepsOptions& options) {
  return analyze(run, options, nullptr, nullptr);
}

StepsAnalysis analyze_steps(const Run& run, const StepsOptions& options,
                            const std::vector<const Span*>& profiler_steps, const SpanCensus& census) {
  return analyze(run, options, &profiler_steps, &census);
}

}  // namespace stepscope
