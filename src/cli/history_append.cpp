#include "cli/history_append.hpp"

#include <cstdio>

#include <fmt/format.h>

#include "history/history_entry.hpp"

namespace stepscope::cli {

int64_t append_to_history(const std::string& db_path, const std::string& run_file, const Run& run,
                          const std::string& config, int exit_status) {
  RunSteps steps = run_steps(run);
  HistoryEntry entry = history_entry(run, steps, {run_file, current_git_commit(), config, exit_status});
  HistoryDb db(db_path, HistoryDb::Mode::kCreate);
  int64_t id = db.append(entry, steps.steps);
  fmt::print(stderr, "stepscope: run {} added to the history {} ({} steps)\n", id, db_path, steps.steps.size());
  return id;
}

}  // namespace stepscope::cli
