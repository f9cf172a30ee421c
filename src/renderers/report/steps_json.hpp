// The "steps" object of `stepscope report --json` (docs/report-json.md).
#pragma once

#include <string>

#include "analyses/job_ranks.hpp"
#include "analyses/steps/steps.hpp"

namespace stepscope {

// `job`: every rank of the report's runs ("ranks").
void append_steps_json(const Run& run, const StepsAnalysis& steps, const JobRanks& job, std::string& out);

}  // namespace stepscope
