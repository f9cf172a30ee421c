// The step anatomy section of `stepscope report` (terminal), and the one-line
// reason shared with JSON when a run has no steps.
#pragma once

#include <ostream>
#include <string>

#include "analyses/steps/steps.hpp"

namespace stepscope {

void write_steps_text(const Run& run, const StepsAnalysis& steps, std::ostream& out);

// Where a trace's steps came from, in one line (text and JSON).
std::string trace_origin_note(const ProcessSteps& p);

// Why a run has no steps, from what the recorder wrote about its hooks.
std::string no_steps_reason(const Run& run);

}  // namespace stepscope
