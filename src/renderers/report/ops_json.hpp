// The "ops" array of `stepscope report --json` (docs/ops.md).
#pragma once

#include <string>

#include "analyses/ops.hpp"

namespace stepscope {

void append_ops_json(const Run& run, const OpsAnalysis& ops, std::string& out);

}  // namespace stepscope
