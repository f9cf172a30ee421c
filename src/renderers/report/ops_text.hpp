// The operator table of `stepscope report` (terminal), laid out like
// torch.profiler's key_averages().table().
#pragma once

#include <ostream>

#include "analyses/ops.hpp"

namespace stepscope {

void write_ops_text(const Run& run, const OpsAnalysis& ops, std::ostream& out, size_t top);

}  // namespace stepscope
