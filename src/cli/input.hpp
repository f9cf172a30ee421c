// Opening what the user points a command at: a run file, or a trace that is
// imported into a Run in memory (the fast path DESIGN.md describes).
#pragma once

#include <string>

#include "importers/chrome_trace.hpp"
#include "run/run.hpp"

namespace stepscope::cli {

// `trace_options` apply when `path` is a trace.
Run open_run_or_trace(const std::string& path, const ChromeTraceOptions& trace_options = {});

}  // namespace stepscope::cli
