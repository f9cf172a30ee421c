// torch.profiler's step ranges by name: "ProfilerStep#N" around each step it
// records, and "ProfilerStep*", the one name key_averages() gives them all.
// Both the importer and the analyses need them, so they live with the Run.
#pragma once

#include <string_view>

#include "run/string_table.hpp"

namespace stepscope {

// "ProfilerStep#" and the step number.
bool is_profiler_step_name(std::string_view name);

// The operator table and span profiles show every ProfilerStep#N as this
// one name: a trace of steps 10 to 12 and one of steps 20 to 22 then have the
// same row and frame, and a flame graph of many steps one tower, not one per
// step.
inline constexpr std::string_view kProfilerStepGroup = "ProfilerStep*";

// Interns kProfilerStepGroup when `strings` holds a ProfilerStep#N name: the
// importer does, because analyses see a Run read-only and need its id.
void add_profiler_step_group(StringTable& strings);

}  // namespace stepscope
