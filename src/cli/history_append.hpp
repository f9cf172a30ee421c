// Appending a recorded run to the history (record --history, sweep --history).
#pragma once

#include <string>

#include "run/run.hpp"

namespace stepscope::cli {

// Loads nothing: `run` is the run just written to `run_file`. Returns the
// entry's id; notes on standard error what was appended.
int64_t append_to_history(const std::string& db_path, const std::string& run_file, const Run& run,
                          const std::string& config, int exit_status);

}  // namespace stepscope::cli
