// The steps of a torch.profiler trace: its "ProfilerStep#N" ranges, which
// torch.profiler's schedule writes around each step it records.
#pragma once

#include <string_view>
#include <vector>

#include "run/profiler_step_name.hpp"
#include "run/run.hpp"

namespace stepscope {

// The host spans (cpu ops or user ranges) that are ProfilerStep ranges, of
// every process, ordered by start time; spans that end before they start are
// left out.
std::vector<const Span*> profiler_step_spans(const Run& run);

// The same, for an analysis that passes over the spans anyway: `is_step` on
// each span in trace order, then `order_by_start` on those it kept. Names
// are far fewer than spans: each is looked at once.
class ProfilerStepFinder {
 public:
  explicit ProfilerStepFinder(const StringTable& strings);
  bool is_step_name(StringId name) const { return step_name_[name]; }
  bool is_step(const Span& span) const {
    return (span.kind == SpanKind::kCpuOp || span.kind == SpanKind::kUserRange) && step_name_[span.name] &&
           span.end_ns >= span.start_ns;
  }
  // By start time, ties in trace order.
  static void order_by_start(std::vector<const Span*>& steps);

 private:
  std::vector<bool> step_name_;  // by string id
};

}  // namespace stepscope
