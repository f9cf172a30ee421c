#include "run/run_trimmer.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "run/metadata_table.hpp"
#include "util/error.hpp"

namespace stepscope {

namespace {

// Rounds of cutting within one trim: the first cut is a guess from the
// file's time span, the next ones from what the previous freed; what is
// left over waits for the next commit's trim.
constexpr int kMostRounds = 4;

// Rows deleted, by one trim or by all so far.
struct Dropped {
  int64_t samples = 0, spans = 0, flows = 0, counter_values = 0;

  bool any() const { return samples + spans + flows + counter_values > 0; }
  Dropped& operator+=(const Dropped& other) {
    samples += other.samples;
    spans += other.spans;
    flows += other.flows;
    counter_values += other.counter_values;
    return *this;
  }
};

// What earlier trims of the file dropped, from its metadata.
struct PastTrims {
  std::optional<int64_t> before_ns;
  Dropped dropped;
};

PastTrims past_trims(SqliteDb& db) {
  PastTrims past;
  past.before_ns = metadata_table_int(db, trim_keys::kTrimmedBeforeNs);
  past.dropped.samples = metadata_table_int(db, trim_keys::kSamples).value_or(0);
  past.dropped.spans = metadata_table_int(db, trim_keys::kSpans).value_or(0);
  past.dropped.flows = metadata_table_int(db, trim_keys::kFlows).value_or(0);
  past.dropped.counter_values = metadata_table_int(db, trim_keys::kCounterValues).value_or(0);
  return past;
}

// The one value `sql` selects, unless NULL.
std::optional<int64_t> query_int(SqliteDb& db, const char* sql) {
  SqliteStatement select(db, sql);
  if (!select.step() || select.column_is_null(0)) return std::nullopt;
  return select.column_int(0);
}

// Where the file's data starts: where the last trim cut, or the first rows'
// times. Nullopt when it holds none.
std::optional<int64_t> earliest_ns(SqliteDb& db, const PastTrims& past) {
  if (past.before_ns) return past.before_ns;
  return query_int(db,
                    "SELECT min(t) FROM ("
                    " SELECT (SELECT start_ns FROM sample_blocks ORDER BY id LIMIT 1) AS t UNION ALL"
                    " SELECT (SELECT start_ns FROM span_blocks ORDER BY id LIMIT 1) UNION ALL"
                    " SELECT (SELECT start_ns FROM counter_blocks ORDER BY id LIMIT 1))");
}

// Where it ends, about: the last block's end and the last runs' (a guess's
// scale, not a bound: the index on blocks and a few rows, not a scan).
int64_t latest_ns(SqliteDb& db) {
  return query_int(db,
                    "SELECT max(t) FROM (SELECT max(end_ns) AS t FROM sample_blocks UNION ALL"
                    " SELECT max(end_ns) FROM counter_blocks UNION ALL"
                    " SELECT latest_end_ns FROM (SELECT latest_end_ns FROM span_blocks ORDER BY id DESC LIMIT 16))")
      .value_or(std::numeric_limits<int64_t>::min());
}

// Deletes the blocks of `table` (sample_blocks, counter_blocks,
// span_blocks) whose `end` column is before `before_ns`, from the first on
// (blocks follow each other in time), but the newest, which numbers the next
// (run_writer.cpp): returns the rows they held.
int64_t delete_blocks(SqliteDb& db, const char* table, int64_t before_ns, const char* end = "end_ns") {
  int64_t last_deleted = -1, rows = 0;
  {
    // The blocks' times, not their data (in overflow pages).
    std::string sql = fmt::format(
        "SELECT id, count, {1}, id = (SELECT max(id) FROM {0}) FROM {0} ORDER BY id", table, end);
    SqliteStatement blocks(db, sql.c_str());
    while (blocks.step() && blocks.column_int(2) < before_ns && blocks.column_int(3) == 0) {
      last_deleted = blocks.column_int(0);
      rows += blocks.column_int(1);
    }
  }
  if (last_deleted < 0) return 0;
  std::string sql = fmt::format("DELETE FROM {} WHERE id <= ?", table);
  SqliteStatement(db, sql.c_str()).bind(1, last_deleted).run();
  return rows;
}

// The first runs of a table's rows (row_ranges, in the order written) whose
// `column` is below `bound`: the rows a trim deletes whole.
struct LeadingRuns {
  std::vector<int64_t> range_ids;
  int64_t last_row = -1;
  int64_t rows = 0;
};

LeadingRuns leading_runs(SqliteDb& db, const char* table, const char* column, int64_t bound) {
  std::string sql = fmt::format("SELECT id, first_id, count, {} FROM row_ranges WHERE rows = ? ORDER BY id", column);
  SqliteStatement select(db, sql.c_str());
  select.bind_text(1, table);
  LeadingRuns runs;
  while (select.step() && select.column_int(3) < bound) {
    int64_t first = select.column_int(1), count = select.column_int(2);
    if (!runs.range_ids.empty() && first != runs.last_row + 1) {
      throw InputError(fmt::format("{}: table row_ranges row {}: {} rows {} to {} after row {}", db.path(),
                                   select.column_int(0), table, first, first + count - 1, runs.last_row));
    }
    runs.range_ids.push_back(select.column_int(0));
    runs.last_row = first + count - 1;
    runs.rows += count;
  }
  return runs;
}

// Deletes the runs' rows and the runs themselves: returns how many rows.
int64_t delete_runs(SqliteDb& db, const char* table, const LeadingRuns& runs) {
  if (runs.range_ids.empty()) return 0;
  std::string sql = fmt::format("DELETE FROM {} WHERE id <= ?", table);
  SqliteStatement(db, sql.c_str()).bind(1, runs.last_row).run();
  SqliteStatement range(db, "DELETE FROM row_ranges WHERE id = ?");
  for (int64_t id : runs.range_ids) range.bind(1, id).run();
  return runs.rows;
}

// The first span the file still holds: flows from spans before it lead
// nowhere.
int64_t first_span(SqliteDb& db) {
  return query_int(db, "SELECT first_span FROM span_blocks ORDER BY id LIMIT 1")
      .value_or(std::numeric_limits<int64_t>::max());
}

// Deletes what ended before `before_ns`: sample blocks, blocks of spans
// whose latest end is before it, the runs of flows from spans no longer
// there, and counter blocks. Whole blocks and runs, from the first on, so
// that every table's ids still run on without gaps from its first row.
Dropped delete_before(SqliteDb& db, int64_t before_ns) {
  Dropped dropped;
  dropped.samples = delete_blocks(db, "sample_blocks", before_ns);
  dropped.spans = delete_blocks(db, "span_blocks", before_ns, "latest_end_ns");
  dropped.flows = delete_runs(db, "flows", leading_runs(db, "flows", "high", first_span(db)));
  dropped.counter_values = delete_blocks(db, "counter_blocks", before_ns);
  return dropped;
}

// Where to cut next, assuming the file's bytes accrue steadily with time: at
// the rate the last round freed them, or, before any, in proportion to the
// time the file spans (an underestimate, as the tables never trimmed take
// their share: the next rounds make up for it).
int64_t next_cutoff(int64_t cutoff, int64_t latest, uint64_t used, uint64_t target, double freed_per_ns) {
  auto excess = static_cast<double>(used - target);
  double span = static_cast<double>(std::max<int64_t>(latest - cutoff, 1));
  double ns = freed_per_ns > 0 ? excess / freed_per_ns : excess / static_cast<double>(used) * span;
  return cutoff + static_cast<int64_t>(std::ceil(std::min(ns, span)));
}

void write_metadata(SqliteDb& db, const std::map<std::string, std::string>& metadata) {
  SqliteStatement put(db, "INSERT OR REPLACE INTO metadata(key, value) VALUES (?, ?)");
  for (const auto& [key, value] : metadata) put.bind_text(1, key).bind_text(2, value).run();
}

std::map<std::string, std::string> describe(uint64_t max_bytes, int64_t before_ns, const Dropped& dropped) {
  return {
      {trim_keys::kMaxSizeBytes, std::to_string(max_bytes)},
      {trim_keys::kTrimmedBeforeNs, std::to_string(before_ns)},
      {trim_keys::kSamples, std::to_string(dropped.samples)},
      {trim_keys::kSpans, std::to_string(dropped.spans)},
      {trim_keys::kFlows, std::to_string(dropped.flows)},
      {trim_keys::kCounterValues, std::to_string(dropped.counter_values)},
  };
}

}  // namespace

RunTrimmer::RunTrimmer(SqliteDb& db, uint64_t max_bytes)
    : db_(db),
      max_bytes_(max_bytes),
      used_(db,
            "SELECT (c.page_count - f.freelist_count) * s.page_size"
            " FROM pragma_page_count() c, pragma_freelist_count() f, pragma_page_size() s") {}

uint64_t RunTrimmer::target_bytes() const {
  return static_cast<uint64_t>(static_cast<double>(max_bytes_) * kTargetShare);
}

uint64_t RunTrimmer::used_bytes() {
  int64_t used = used_.step() ? used_.column_int(0) : 0;
  used_.reset();
  return static_cast<uint64_t>(std::max<int64_t>(used, 0));
}

std::map<std::string, std::string> RunTrimmer::trim(int64_t keep_from_ns) {
  uint64_t used = used_bytes();
  if (used <= (catching_up_ ? target_bytes() : max_bytes_)) return {};
  // Under the limit now, and a slice nearer the target.
  const uint64_t goal = std::min(max_bytes_, std::max(target_bytes(), used > kSliceBytes ? used - kSliceBytes : 0));
  db_.exec("BEGIN");
  try {
    std::map<std::string, std::string> metadata = delete_oldest(used, goal, keep_from_ns);
    db_.exec("COMMIT");
    return metadata;
  } catch (...) {
    db_.exec("ROLLBACK");
    throw;
  }
}

std::map<std::string, std::string> RunTrimmer::delete_oldest(uint64_t used, uint64_t goal, int64_t keep_from_ns) {
  PastTrims past = past_trims(db_);
  std::optional<int64_t> cutoff = earliest_ns(db_, past);
  if (!cutoff || *cutoff >= keep_from_ns) return {};
  const int64_t latest = std::max(latest_ns(db_), keep_from_ns);
  Dropped dropped;
  int64_t before_ns = *cutoff;
  double freed_per_ns = 0;
  for (int round = 0; round < kMostRounds && used > goal && *cutoff < keep_from_ns; ++round) {
    int64_t next = std::clamp(next_cutoff(*cutoff, latest, used, goal, freed_per_ns), *cutoff + 1, keep_from_ns);
    Dropped now = delete_before(db_, next);
    uint64_t after = used_bytes();
    if (after < used) freed_per_ns = static_cast<double>(used - after) / static_cast<double>(next - *cutoff);
    if (now.any()) before_ns = next;
    dropped += now;
    *cutoff = next;
    used = after;
  }
  catching_up_ = used > target_bytes();
  if (!dropped.any()) return {};
  dropped += past.dropped;
  std::map<std::string, std::string> metadata = describe(max_bytes_, before_ns, dropped);
  write_metadata(db_, metadata);
  return metadata;
}

}  // namespace stepscope
