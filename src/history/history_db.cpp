#include "history/history_db.hpp"

#include <filesystem>
#include <type_traits>

#include <fmt/format.h>

#include "run/sqlite_db.hpp"
#include "util/error.hpp"

namespace stepscope {

namespace {

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS history_runs (
  id INTEGER PRIMARY KEY,
  recorded_unix_ns INTEGER NOT NULL,
  command TEXT NOT NULL,
  git_commit TEXT NOT NULL,
  host TEXT NOT NULL,
  config TEXT NOT NULL,
  run_file TEXT NOT NULL,
  exit_status INTEGER NOT NULL,
  steps_origin TEXT NOT NULL,
  has_phases INTEGER NOT NULL,
  steps INTEGER NOT NULL,
  warmup_steps INTEGER NOT NULL,
  samples_per_sec REAL,
  tokens_per_sec REAL,
  step_time_mean_ms REAL,
  peak_host_bytes INTEGER,
  peak_device_bytes INTEGER);
CREATE INDEX IF NOT EXISTS history_runs_by_command ON history_runs (command, recorded_unix_ns);
CREATE TABLE IF NOT EXISTS history_steps (
  run_id INTEGER NOT NULL REFERENCES history_runs (id),
  idx INTEGER NOT NULL,
  start_ns INTEGER NOT NULL,
  end_ns INTEGER NOT NULL,
  samples INTEGER NOT NULL,
  tokens INTEGER NOT NULL,
  host_peak_bytes INTEGER NOT NULL,
  device_peak_bytes INTEGER NOT NULL,
  data_wait_ns INTEGER NOT NULL,
  forward_ns INTEGER NOT NULL,
  backward_ns INTEGER NOT NULL,
  optimizer_ns INTEGER NOT NULL,
  other_ns INTEGER NOT NULL,
  warmup INTEGER NOT NULL,
  PRIMARY KEY (run_id, idx));
)sql";

constexpr const char* kEntryColumns =
    "id, recorded_unix_ns, command, git_commit, host, config, run_file, exit_status, steps_origin, has_phases, "
    "steps, warmup_steps, samples_per_sec, tokens_per_sec, step_time_mean_ms, peak_host_bytes, peak_device_bytes";

// SQLite reports NULL as 0; a column's type tells them apart.
template <typename T>
std::optional<T> nullable(SqliteStatement& q, int column, bool is_null) {
  if (is_null) return std::nullopt;
  if constexpr (std::is_same_v<T, double>) {
    return q.column_double(column);
  } else {
    return q.column_int(column);
  }
}

HistoryEntry read_entry(SqliteStatement& q) {
  HistoryEntry e;
  e.id = q.column_int(0);
  e.recorded_unix_ns = q.column_int(1);
  e.command = q.column_text(2);
  e.git_commit = q.column_text(3);
  e.host = q.column_text(4);
  e.config = q.column_text(5);
  e.run_file = q.column_text(6);
  e.exit_status = static_cast<int>(q.column_int(7));
  e.steps_origin = q.column_text(8);
  e.has_phases = q.column_int(9) != 0;
  e.steps = static_cast<size_t>(q.column_int(10));
  e.warmup_steps = static_cast<size_t>(q.column_int(11));
  // Columns 17..21 say which of the optional ones are NULL.
  e.samples_per_sec = nullable<double>(q, 12, q.column_int(17) != 0);
  e.tokens_per_sec = nullable<double>(q, 13, q.column_int(18) != 0);
  e.step_time_mean_ms = nullable<double>(q, 14, q.column_int(19) != 0);
  e.peak_host_bytes = nullable<int64_t>(q, 15, q.column_int(20) != 0);
  e.peak_device_bytes = nullable<int64_t>(q, 16, q.column_int(21) != 0);
  return e;
}

std::string select_entries(const char* where) {
  return fmt::format(
      "SELECT {}, samples_per_sec IS NULL, tokens_per_sec IS NULL, step_time_mean_ms IS NULL, "
      "peak_host_bytes IS NULL, peak_device_bytes IS NULL FROM history_runs {}",
      kEntryColumns, where);
}

template <typename T>
void bind_optional(SqliteStatement& q, int index, const std::optional<T>& value) {
  if (value) q.bind(index, *value);  // unbound parameters are NULL
}

}  // namespace

HistoryDb::HistoryDb(const std::string& path, Mode mode) {
  if (mode == Mode::kReadExisting && !std::filesystem::exists(path)) {
    throw InputError(fmt::format("no run history at {} (record with --history first)", path));
  }
  if (mode == Mode::kCreate) {
    std::filesystem::path folder = std::filesystem::path(path).parent_path();
    std::error_code ec;
    if (!folder.empty()) std::filesystem::create_directories(folder, ec);
    if (ec) throw InputError(fmt::format("cannot create {}: {}", folder.string(), ec.message()));
  }
  db_ = std::make_unique<SqliteDb>(path, SqliteDb::Mode::kCreate);
  SqliteStatement version(*db_, "PRAGMA user_version");
  version.step();
  int64_t found = version.column_int(0);
  SqliteStatement tables(*db_, "SELECT count(*) FROM sqlite_master");
  tables.step();
  bool empty = tables.column_int(0) == 0;
  if (empty && mode == Mode::kCreate) {
    db_->exec(kSchema);
    db_->exec(fmt::format("PRAGMA user_version = {}", kHistorySchemaVersion).c_str());
  } else if (found != kHistorySchemaVersion) {
    throw InputError(fmt::format("{} is not a stepscope run history (version {}, expected {})", path, found,
                                 kHistorySchemaVersion));
  }
}

HistoryDb::~HistoryDb() = default;

int64_t HistoryDb::append(const HistoryEntry& e, const std::vector<StepRecord>& steps) {
  db_->exec("BEGIN IMMEDIATE");
  try {
    SqliteStatement q(*db_,
                      "INSERT INTO history_runs (recorded_unix_ns, command, git_commit, host, config, run_file, "
                      "exit_status, steps_origin, has_phases, steps, warmup_steps, samples_per_sec, tokens_per_sec, "
                      "step_time_mean_ms, peak_host_bytes, peak_device_bytes) "
                      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    q.bind(1, e.recorded_unix_ns).bind_text(2, e.command).bind_text(3, e.git_commit).bind_text(4, e.host);
    q.bind_text(5, e.config).bind_text(6, e.run_file).bind(7, int64_t{e.exit_status}).bind_text(8, e.steps_origin);
    q.bind(9, int64_t{e.has_phases}).bind(10, static_cast<int64_t>(e.steps));
    q.bind(11, static_cast<int64_t>(e.warmup_steps));
    bind_optional(q, 12, e.samples_per_sec);
    bind_optional(q, 13, e.tokens_per_sec);
    bind_optional(q, 14, e.step_time_mean_ms);
    bind_optional(q, 15, e.peak_host_bytes);
    bind_optional(q, 16, e.peak_device_bytes);
    q.run();
    SqliteStatement last(*db_, "SELECT last_insert_rowid()");
    last.step();
    int64_t id = last.column_int(0);
    SqliteStatement s(*db_,
                      "INSERT INTO history_steps VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    for (size_t i = 0; i < steps.size(); ++i) {
      const StepRecord& r = steps[i];
      s.bind(1, id).bind(2, static_cast<int64_t>(i)).bind(3, r.start_ns).bind(4, r.end_ns).bind(5, r.samples);
      s.bind(6, r.tokens).bind(7, r.host_peak_bytes).bind(8, r.device_peak_bytes);
      for (size_t p = 0; p < kStepPhaseCount; ++p) s.bind(9 + static_cast<int>(p), r.phase_ns[p]);
      s.bind(14, int64_t{r.warmup});
      s.run();
    }
    db_->exec("COMMIT");
    return id;
  } catch (...) {
    db_->exec("ROLLBACK");
    throw;
  }
}

std::vector<HistoryEntry> HistoryDb::entries() {
  std::string sql = select_entries("ORDER BY recorded_unix_ns, id");
  SqliteStatement q(*db_, sql.c_str());
  std::vector<HistoryEntry> out;
  while (q.step()) out.push_back(read_entry(q));
  return out;
}

std::optional<HistoryEntry> HistoryDb::latest_before(const std::string& command, int64_t before_unix_ns) {
  std::string sql =
      select_entries("WHERE command = ? AND recorded_unix_ns < ? AND exit_status = 0 AND steps >= 2 "
                     "ORDER BY recorded_unix_ns DESC, id DESC LIMIT 1");
  SqliteStatement q(*db_, sql.c_str());
  q.bind_text(1, command).bind(2, before_unix_ns);
  if (!q.step()) return std::nullopt;
  return read_entry(q);
}

std::vector<StepRecord> HistoryDb::steps(int64_t id) {
  SqliteStatement q(*db_,
                    "SELECT start_ns, end_ns, samples, tokens, host_peak_bytes, device_peak_bytes, data_wait_ns, "
                    "forward_ns, backward_ns, optimizer_ns, other_ns, warmup FROM history_steps WHERE run_id = ? "
                    "ORDER BY idx");
  q.bind(1, id);
  std::vector<StepRecord> out;
  while (q.step()) {
    StepRecord& r = out.emplace_back();
    r.start_ns = q.column_int(0);
    r.end_ns = q.column_int(1);
    r.samples = q.column_int(2);
    r.tokens = q.column_int(3);
    r.host_peak_bytes = q.column_int(4);
    r.device_peak_bytes = q.column_int(5);
    for (size_t p = 0; p < kStepPhaseCount; ++p) r.phase_ns[p] = q.column_int(6 + static_cast<int>(p));
    r.warmup = q.column_int(11) != 0;
  }
  return out;
}

}  // namespace stepscope
