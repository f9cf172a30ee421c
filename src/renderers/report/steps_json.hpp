// The "steps" object of `stepscope report --json` (docs/report-json.md).
#pragma once

#include <string>

#include "analyses/steps/steps.hpp"

namespace stepscope {

void append_steps_json(const Run& run, const StepsAnalysis& steps, std::string& out);

}  // namespace stepscope
