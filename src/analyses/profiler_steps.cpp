#include "analyses/profiler_steps.hpp"

#include <algorithm>

namespace stepscope {

bool is_profiler_step_name(std::string_view name) {
  constexpr std::string_view kPrefix = "ProfilerStep#";
  if (name.size() <= kPrefix.size() || !name.starts_with(kPrefix)) return false;
  return std::all_of(name.begin() + static_cast<std::ptrdiff_t>(kPrefix.size()), name.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
}

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
