// Opening what the user points a command at: a run file, or a trace that is
// imported into a Run in memory (the fast path DESIGN.md describes).
#pragma once

#include <string>

#include "run/run.hpp"

namespace stepscope::cli {

Run open_run_or_trace(const std::string& path);

}  // namespace stepscope::cli
