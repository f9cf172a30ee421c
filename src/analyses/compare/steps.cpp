#include "analyses/compare/steps.hpp"

#include <algorithm>
#include <map>
#include <string_view>

#include "analyses/steps/profiler_steps.hpp"

namespace stepscope {

std::vector<StepRecord> profiler_steps(const Run& run, int64_t* pid) {
  std::map<int64_t, std::vector<StepRecord>> by_pid;
  for (const Span* s : profiler_step_spans(run)) {
    StepRecord& step = by_pid[s->pid].emplace_back();
    step.start_ns = s->start_ns;
    step.end_ns = s->end_ns;
    step.tid = s->tid;
    step.phase_ns[static_cast<size_t>(StepPhase::kOther)] = s->end_ns - s->start_ns;
  }
  std::vector<StepRecord>* best = nullptr;
  for (auto& [p, steps] : by_pid) {
    if (!best || steps.size() > best->size()) {
      best = &steps;
      if (pid) *pid = p;
    }
  }
  if (!best) return {};
  size_t warmup = warmup_step_count(best->size());
  for (size_t i = 0; i < warmup; ++i) (*best)[i].warmup = true;
  return std::move(*best);
}

RunSteps run_steps(const Run& run) {
  RunSteps out;
  StepsAnalysis analysis = analyze_steps(run);
  // Trace steps keep compare's own reading of ProfilerStep ranges (every
  // range, no phases), which its documentation and verdicts rely on.
  if (!analysis.empty() && analysis.origin == StepsOrigin::kHooks) {
    const ProcessSteps& primary = analysis.processes[analysis.primary];
    out.steps = primary.steps;
    out.pid = primary.pid;
    out.origin = "hooks";
    out.has_phases = true;
    return out;
  }
  out.steps = profiler_steps(run, &out.pid);
  if (!out.steps.empty()) out.origin = "ProfilerStep spans";
  return out;
}

}  // namespace stepscope
