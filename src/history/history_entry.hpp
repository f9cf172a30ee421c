// What the history keeps of a run: its identity (command, commit, host,
// configuration) and key metrics over its steady steps.
#pragma once

#include <string>

#include "analyses/compare/steps.hpp"
#include "history/history_db.hpp"

namespace stepscope {

struct RunIdentity {
  std::string run_file;
  std::string git_commit;
  std::string config;  // free text, JSON by convention: {"rate_hz": 100} or sweep settings
  int exit_status = 0;
};

HistoryEntry history_entry(const Run& run, const RunSteps& steps, const RunIdentity& identity);

// The commit checked out in the working directory (`git rev-parse HEAD`), with
// "-dirty" when tracked files changed; empty outside a git work tree or
// without git. GITHUB_SHA, when set, wins (CI checks out detached merges).
std::string current_git_commit();

}  // namespace stepscope
