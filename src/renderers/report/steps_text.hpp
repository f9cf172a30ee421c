// The step anatomy section of `stepscope report` (terminal), and the one-line
// reason shared with JSON when a run has no steps.
#pragma once

#include <ostream>
#include <string>

#include "analyses/job_ranks.hpp"
#include "analyses/steps/steps.hpp"

namespace stepscope {

// `job`: every rank of the report's runs, listed when there are several.
void write_steps_text(const Run& run, const StepsAnalysis& steps, const JobRanks& job, std::ostream& out);

// The phase that takes most of a rank's steady steps.
StepPhase top_phase(const ProcessSteps& p);

// Where a trace's steps came from, in one line (text and JSON).
std::string trace_origin_note(const ProcessSteps& p);

// Why a run has no steps, from what the recorder wrote about its hooks.
std::string no_steps_reason(const Run& run);

}  // namespace stepscope
