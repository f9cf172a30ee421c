// The steps of a torch.profiler trace and their phases, read from what the
// profiler writes: the ProfilerStep#N ranges (the steps), the DataLoader's
// "enumerate(DataLoader)#...__next__" ranges (data wait), the optimizer's
// "Optimizer.step#..." and "Optimizer.zero_grad#..." ranges (optimizer), the
// autograd engine's "autograd::engine::evaluate_function: ..." operators on
// any thread of the process (backward), and the step thread's operators
// before the first backward operator (forward). Exact definitions:
// docs/steps.md, "Steps from a torch.profiler trace".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analyses/steps/steps.hpp"
#include "run/run.hpp"

namespace stepscope {

struct TraceProcessSteps {
  int64_t pid = 0;
  std::vector<StepRecord> steps;  // complete steps, in time order; samples and tokens unknown
  size_t ranges = 0;              // ProfilerStep ranges of the process, complete or not
  bool last_left_out = false;     // the last range was left out: the profiler cuts it short
  // The DataLoader iterator class the data waits name
  // ("_SingleProcessDataLoaderIter": num_workers=0), empty without data waits.
  std::string loader_iterator;
};

// Per process with ProfilerStep ranges, by pid. Of two or more distinct
// ranges, the last is left out (HTA's rule, as the device analyses do).
std::vector<TraceProcessSteps> trace_steps(const Run& run);
// The same with the ranges found already (profiler_step_spans, or the
// report's DeviceLaunches::profiler_steps).
std::vector<TraceProcessSteps> trace_steps(const Run& run, const std::vector<const Span*>& profiler_steps);

// Name classes the phases are read from.
bool is_data_wait_range(std::string_view name);  // enumerate(DataLoader)#...
bool is_optimizer_range(std::string_view name);  // Optimizer.step#..., Optimizer.zero_grad#...
bool is_backward_op(std::string_view name);      // autograd::engine::evaluate_function: ..., *Backward*

}  // namespace stepscope
