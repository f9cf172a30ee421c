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

// How many of `others` (the other ranks of a job) to read side by side beside
// `first`, by what each takes in memory (a run file's rows, as the check
// before reading one weighs them; a trace by its size) against what this
// process can still have: those that fit, at least one (whose reading then
// says whether it fits beside the others), at most `most`.
size_t runs_at_once(const std::string& first, const std::vector<std::string>& others, const std::string& window,
                    size_t most);

// Adds --window to a command that reads runs.
void add_window_option(CLI::App* command, std::string& window);

}  // namespace stepscope::cli
