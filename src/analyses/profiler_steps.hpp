// The steps of a torch.profiler trace: its "ProfilerStep#N" ranges, which
// torch.profiler's schedule writes around each step it records.
#pragma once

#include <string_view>
#include <vector>

#include "run/run.hpp"

namespace stepscope {

// "ProfilerStep#" and the step number, as torch.profiler writes it.
bool is_profiler_step_name(std::string_view name);

// The host spans (cpu ops or user ranges) that are ProfilerStep ranges, of
// every process, ordered by start time; spans that end before they start are
// left out.
std::vector<const Span*> profiler_step_spans(const Run& run);

}  // namespace stepscope
