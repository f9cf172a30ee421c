// `stepscope sweep`'s table for a terminal.
#pragma once

#include <ostream>

#include "analyses/compare/sweep.hpp"

namespace stepscope {

void write_sweep_text(const SweepResult& result, std::ostream& out);

}  // namespace stepscope
