#include "analyses/profiler_steps.hpp"

#include <algorithm>

namespace stepscope {

bool is_profiler_step_name(std::string_view name) {
  constexpr std::string_view kPrefix = "ProfilerStep#";
  if (name.size() <= kPrefix.size() || !name.starts_with(kPrefix)) return false;
  return std::all_of(name.begin() + static_cast<std::ptrdiff_t>(kPrefix.size()), name.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
}

std::vector<const Span*> profiler_step_spans(const Run& run) {
  // Names are far fewer than spans: each is looked at once.
  std::vector<bool> step_name(run.strings.size());
  for (StringId id = 0; id < step_name.size(); ++id) step_name[id] = is_profiler_step_name(run.strings.get(id));
  std::vector<const Span*> steps;
  for (const Span& span : run.spans) {
    if (span.kind != SpanKind::kCpuOp && span.kind != SpanKind::kUserRange) continue;
    if (span.end_ns < span.start_ns || !step_name[span.name]) continue;
    steps.push_back(&span);
  }
  std::stable_sort(steps.begin(), steps.end(),
                   [](const Span* a, const Span* b) { return a->start_ns < b->start_ns; });
  return steps;
}

}  // namespace stepscope
