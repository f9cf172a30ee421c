#include "analyses/steps/profiler_steps.hpp"

#include <algorithm>

namespace stepscope {

ProfilerStepFinder::ProfilerStepFinder(const StringTable& strings) : step_name_(strings.size()) {
  for (StringId id = 0; id < step_name_.size(); ++id) step_name_[id] = is_profiler_step_name(strings.get(id));
}

void ProfilerStepFinder::order_by_start(std::vector<const Span*>& steps) {
  std::stable_sort(steps.begin(), steps.end(), [](const Span* a, const Span* b) { return a->start_ns < b->start_ns; });
}

std::vector<const Span*> profiler_step_spans(const Run& run) {
  ProfilerStepFinder finder(run.strings);
  std::vector<const Span*> steps;
  for (const Span& span : run.spans) {
    if (finder.is_step(span)) steps.push_back(&span);
  }
  ProfilerStepFinder::order_by_start(steps);
  return steps;
}

}  // namespace stepscope
