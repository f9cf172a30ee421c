#include "analyses/compare_steps.hpp"

#include <algorithm>
#include <map>
#include <string_view>

namespace stepscope {

namespace {

bool is_profiler_step_name(std::string_view name) {
  constexpr std::string_view kPrefix = "ProfilerStep#";
  if (name.size() <= kPrefix.size() || name.substr(0, kPrefix.size()) != kPrefix) return false;
  return std::all_of(name.begin() + static_cast<std::ptrdiff_t>(kPrefix.size()), name.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

std::vector<StepRecord> profiler_steps(const Run& run, int64_t* pid) {
  std::map<int64_t, std::vector<StepRecord>> by_pid;
  for (const Span& s : run.spans) {
    if (s.kind != SpanKind::kCpuOp && s.kind != SpanKind::kUserRange) continue;
    if (s.end_ns < s.start_ns || !is_profiler_step_name(run.strings.get(s.name))) continue;
    StepRecord& step = by_pid[s.pid].emplace_back();
    step.start_ns = s.start_ns;
    step.end_ns = s.end_ns;
    step.tid = s.tid;
    step.phase_ns[static_cast<size_t>(StepPhase::kOther)] = s.end_ns - s.start_ns;
  }
  std::vector<StepRecord>* best = nullptr;
  for (auto& [p, steps] : by_pid) {
    if (!best || steps.size() > best->size()) {
      best = &steps;
      if (pid) *pid = p;
    }
  }
  if (!best) return {};
  std::sort(best->begin(), best->end(),
            [](const StepRecord& a, const StepRecord& b) { return a.start_ns < b.start_ns; });
  size_t warmup = warmup_step_count(best->size());
  for (size_t i = 0; i < warmup; ++i) (*best)[i].warmup = true;
  return std::move(*best);
}

RunSteps run_steps(const Run& run) {
  RunSteps out;
  StepsAnalysis analysis = analyze_steps(run);
  if (!analysis.empty()) {
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
