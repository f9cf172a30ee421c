// Opening what the user points a command at: a run file, or a trace that is
// imported into a Run in memory (the fast path DESIGN.md describes).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "importers/chrome_trace.hpp"
#include "run/run.hpp"

namespace stepscope::cli {

// `trace_options` apply when `path` is a trace; a `window` (--window's
// text, analyses/window.hpp) keeps only that part of it.
Run open_run_or_trace(const std::string& path, const ChromeTraceOptions& trace_options = {},
                      const std::string& window = {});

// The inputs of a command that reads the runs or traces of a job: a
// directory stands for its runs and traces (.db, .json, .json.gz), in name
// order; an empty or unreadable directory is an InputError.
std::vector<std::string> expand_inputs(const std::vector<std::string>& inputs);

// Adds --window to a command that reads runs.
void add_window_option(CLI::App* command, std::string& window);

}  // namespace stepscope::cli
