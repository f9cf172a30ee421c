// The per-step values compare and sweep read from a run: the steps of the
// steps analysis (recorded runs: the hooks' step spans, primary process), or,
// for an imported torch.profiler trace, its ProfilerStep#N spans.
#pragma once

#include <string>
#include <vector>

#include "analyses/steps/steps.hpp"

namespace stepscope {

struct RunSteps {
  std::vector<StepRecord> steps;  // in time order, warm-up flagged by warmup_step_count
  int64_t pid = 0;
  std::string origin;  // "hooks" or "ProfilerStep spans"; empty when there are none
  bool has_phases = false;  // whether phase_ns holds measured phases
};

RunSteps run_steps(const Run& run);

// The ProfilerStep#N spans (cpu_op or user annotation) of the process with
// the most of them, as steps; their whole time counts as phase "other".
std::vector<StepRecord> profiler_steps(const Run& run, int64_t* pid);

}  // namespace stepscope
