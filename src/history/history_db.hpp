// The run history: one SQLite file (default .stepscope/history.db) to which
// `record --history` appends each run's summary and per-step values, so that
// `stepscope history` lists runs and `compare --baseline last` compares with
// the latest earlier run of the same command even after its run file is gone.
// Schema: docs/compare.md.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analyses/steps/steps.hpp"

namespace stepscope {

class SqliteDb;

struct HistoryEntry {
  int64_t id = 0;  // assigned by append
  int64_t recorded_unix_ns = 0;  // when the run started
  std::string command, git_commit, host, config, run_file;
  int exit_status = 0;
  std::string steps_origin;  // "hooks", "ProfilerStep spans", or empty without steps
  bool has_phases = false;
  size_t steps = 0, warmup_steps = 0;
  std::optional<double> samples_per_sec, tokens_per_sec, step_time_mean_ms;
  std::optional<int64_t> peak_host_bytes, peak_device_bytes;
};

inline constexpr const char* kDefaultHistoryPath = ".stepscope/history.db";
inline constexpr int kHistorySchemaVersion = 1;

class HistoryDb {
 public:
  enum class Mode { kCreate, kReadExisting };
  // kCreate makes the file (and its folder) when missing. Throws InputError
  // when the file is not a stepscope history of this version.
  HistoryDb(const std::string& path, Mode mode);
  ~HistoryDb();
  HistoryDb(const HistoryDb&) = delete;
  HistoryDb& operator=(const HistoryDb&) = delete;

  // Appends the entry and its steps in one transaction; returns its id.
  int64_t append(const HistoryEntry& entry, const std::vector<StepRecord>& steps);
  std::vector<HistoryEntry> entries();  // oldest first
  // The newest entry of `command` that started before `before_unix_ns`,
  // exited 0 and has at least 2 steps (a crashed run is no baseline).
  std::optional<HistoryEntry> latest_before(const std::string& command, int64_t before_unix_ns);
  std::vector<StepRecord> steps(int64_t id);

 private:
  std::unique_ptr<SqliteDb> db_;
};

}  // namespace stepscope
