#include "run/run_file.hpp"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <type_traits>

#include <fmt/format.h>

#include "run/batched_insert.hpp"
#include "run/counter_block.hpp"
#include "run/run_schema.hpp"
#include "run/run_trimmer.hpp"
#include "run/sample_block.hpp"
#include "run/span_block.hpp"
#include "run/stack_block.hpp"
#include "run/sqlite_db.hpp"
#include "util/error.hpp"

namespace stepscope {

namespace {

// Inserts rows [from, to) of a table (all from `from` by default); each
// row's id is its index, so a reader can tell a gap from a complete table.
template <typename Row, typename BindFn>
void append_rows(BatchedInsert& insert, const std::vector<Row>& rows, size_t from, BindFn bind_columns,
                 size_t to = SIZE_MAX) {
  insert.append(from, std::min(to, rows.size()), [&](RowBinder& row, size_t i) {
    row.bind(1, static_cast<int64_t>(i));
    bind_columns(row, rows[i]);
  });
}

// Rewrites (INSERT OR REPLACE, by id) the rows that are new or differ from
// `written`, the copy of what the file holds, and brings the copy up to date.
// Runs of changed rows go in one call, so that they share statements.
template <typename Row, typename BindFn>
void replace_changed_rows(BatchedInsert& insert, const std::vector<Row>& rows,
                          std::vector<Row>& written, BindFn bind_columns) {
  auto unchanged = [&](size_t i) { return i < written.size() && rows[i] == written[i]; };
  for (size_t i = 0; i < rows.size();) {
    if (unchanged(i)) {
      ++i;
      continue;
    }
    size_t end = i + 1;
    while (end < rows.size() && !unchanged(end)) ++end;
    append_rows(insert, rows, i, bind_columns, end);
    i = end;
  }
  written = rows;
}

// A rollback journal, created and deleted at each commit: a writer killed
// between commits leaves the file alone, whole; one killed inside a commit
// leaves a hot journal that the next open rolls back. Measured against it
// (bench/README.md, fourth round): PERSIST and TRUNCATE cost the same CPU
// (PERSIST more system calls: the journal is reopened and synced once more
// per commit). WAL is cheaper, but committed rows then live in the -wal file
// until a checkpoint: a killed recorder's file copied without it silently
// loses them.
constexpr const char* kJournalMode = "PRAGMA journal_mode=DELETE";
constexpr const char* kSynchronous = "PRAGMA synchronous=NORMAL";

// The schema goes into the new, empty file without a journal and without
// syncs. There is nothing to roll back to (a journal would restore an empty
// file, as unreadable as a run as a half-written one), and the first commit's
// fdatasync makes these pages durable with its own. Saved: the journal's
// creation, two fdatasyncs (the journal's and its folder's) and the journal's
// unlink: 1.1 -> 0.5 ms of CPU per creation (bench/README.md, sixth round).
constexpr const char* kCreationPragmas = "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;";

// A writer only appends: each table's and index's rightmost path of pages is
// all it touches again, a few dozen pages. SQLite's default cache (2 MB)
// would instead fill with pages never read again as the file grows, the last
// of a recorder's memory that grew with the recording (bench/README.md, "Long
// runs").
constexpr const char* kWriterCacheSize = "PRAGMA cache_size=-512";

int64_t as_int(uint32_t id) { return static_cast<int64_t>(id); }

// SQLite answers a journal mode it could not switch to with the mode it kept;
// every commit's crash safety rests on this one, so it is checked.
void use_rollback_journal(SqliteDb& db) {
  SqliteStatement mode(db, kJournalMode);
  if (!mode.step() || mode.column_text(0) != "delete") {
    throw InputError(fmt::format("{}: cannot switch to a rollback journal", db.path()));
  }
  db.exec(kSynchronous);
}

}  // namespace

struct RunWriter::Statements {
  explicit Statements(SqliteDb& db)
      : strings(db, "INSERT", "strings", 2),
        flows(db, "INSERT", "flows", 4),
        counter_tracks(db, "INSERT", "counter_tracks", 4),
        processes(db, "INSERT OR REPLACE", "processes", 7),
        threads(db, "INSERT OR REPLACE", "threads", 4),
        metadata(db, "INSERT OR REPLACE INTO metadata(key, value) VALUES (?, ?)"),
        // A block of frames or stacks is numbered by its place: its last is written again as it grows.
        frame_block(db, "INSERT OR REPLACE INTO frame_blocks(id, first_frame, count, data) VALUES (?, ?, ?, ?)"),
        stack_block(db, "INSERT OR REPLACE INTO stack_blocks(id, first_stack, count, data) VALUES (?, ?, ?, ?)"),
        // Other blocks are numbered on from the file's last, as the other tables' rows.
        sample_block(db, "INSERT INTO sample_blocks(id, first_sample, count, start_ns, end_ns, data) "
                         "VALUES ((SELECT coalesce(max(id) + 1, 0) FROM sample_blocks), ?, ?, ?, ?, ?)"),
        counter_block(db, "INSERT INTO counter_blocks(id, first_value, count, start_ns, end_ns, data) "
                          "VALUES ((SELECT coalesce(max(id) + 1, 0) FROM counter_blocks), ?, ?, ?, ?, ?)"),
        span_block(db, "INSERT INTO span_blocks(id, first_span, count, start_ns, end_ns, data, latest_end_ns) "
                       "VALUES ((SELECT coalesce(max(id) + 1, 0) FROM span_blocks), ?, ?, ?, ?, ?, ?)"),
        row_range(db, "INSERT INTO row_ranges(rows, first_id, count, low, high, latest_ns) "
                      "VALUES (?, ?, ?, ?, ?, ?)") {}
  BatchedInsert strings, flows, counter_tracks, processes, threads;
  SqliteStatement metadata;
  // A block is one row of tens of kB: no batching to gain.
  SqliteStatement frame_block, stack_block, sample_block, counter_block, span_block;
  SqliteStatement row_range;
};

RunWriter::RunWriter(const std::string& path) {
  std::error_code ignored;
  std::filesystem::remove(path, ignored);
  std::filesystem::remove(path + "-journal", ignored);
  db_ = std::make_unique<SqliteDb>(path, SqliteDb::Mode::kCreate);
  db_->exec(kCreationPragmas);
  db_->exec("BEGIN");
  db_->exec(run_schema::kSchemaSql);
  {
    SqliteStatement meta(*db_, "INSERT INTO meta(key, value) VALUES (?, ?)");
    meta.bind_text(1, "format").bind_text(2, run_schema::kFormatName).run();
    meta.bind_text(1, "schema_version").bind_text(2, std::to_string(kRunSchemaVersion)).run();
  }
  db_->exec("COMMIT");
  use_rollback_journal(*db_);
  db_->exec(kWriterCacheSize);
  statements_ = std::make_unique<Statements>(*db_);
}

RunWriter::~RunWriter() = default;

void RunWriter::commit(const Run& run) {
  std::optional<int64_t> new_rows_from = trimmer_ ? new_rows_reach_from(run) : std::nullopt;
  db_->exec("BEGIN");
  try {
    write_new_rows(run);
    write_mutable_rows(run);
    db_->exec("COMMIT");
  } catch (...) {
    db_->exec("ROLLBACK");
    // The copies may list rows the rollback undid: the next commit writes
    // every row of those tables again.
    written_processes_.clear();
    written_threads_.clear();
    written_metadata_.clear();
    throw;
  }
  written_ = {run.strings.size(),        run.frames.size(),  run.stacks.size(),
              run.samples.size(),        run.spans.size(),   run.flows.size(),
              run.counter_tracks.size(), run.counter_values.size()};
  if (new_rows_from) newest_rows_from_ns_ = *new_rows_from;
}

std::optional<int64_t> RunWriter::new_rows_reach_from(const Run& run) const {
  std::optional<int64_t> from;
  auto see = [&from](int64_t ns) { from = std::min(from.value_or(ns), ns); };
  for (size_t i = written_.samples; i < run.samples.size(); ++i) see(run.samples[i].ts_ns);
  for (size_t i = written_.spans; i < run.spans.size(); ++i) see(run.spans[i].end_ns);
  for (size_t i = written_.counter_values; i < run.counter_values.size(); ++i) see(run.counter_values[i].ts_ns);
  return from;
}

void RunWriter::limit_size(uint64_t max_bytes) { trimmer_ = std::make_unique<RunTrimmer>(*db_, max_bytes); }

void RunWriter::trim_to_limit(Run& run) {
  if (!trimmer_) return;
  for (auto& [key, value] : trimmer_->trim(newest_rows_from_ns_)) {
    run.metadata[key] = value;
    written_metadata_[key] = std::move(value);
  }
}

void RunWriter::write_new_rows(const Run& run) {
  Statements& st = *statements_;
  st.strings.append(written_.strings, run.strings.size(), [&](RowBinder& row, size_t i) {
    row.bind(1, static_cast<int64_t>(i)).bind_text(2, run.strings.get(static_cast<StringId>(i)));
  });
  write_growing_blocks(st.frame_block, run.frames.all(), written_.frames, 0,
                       [](std::span<const Frame> frames, size_t) { return encode_frame_block(frames); });
  // Stack 0, the root, is implicit.
  write_growing_blocks(st.stack_block, run.stacks.all(), written_.stacks, 1,
                       [](std::span<const StackNode> nodes, size_t first) {
                         return encode_stack_block(nodes, static_cast<StackId>(first));
                       });
  write_blocks(st.sample_block, run.samples, written_.samples, run.samples_dropped, encode_sample_block);
  write_blocks(st.span_block, run.spans, written_.spans, 0, encode_span_block);
  append_rows(st.flows, run.flows, written_.flows, [](RowBinder& s, const Flow& x) {
    s.bind(2, as_int(x.from)).bind(3, as_int(x.to)).bind(4, as_int(x.kind));
  });
  write_row_ranges("flows", run.flows, written_.flows, &Flow::from, &Flow::from);
  append_rows(st.counter_tracks, run.counter_tracks, written_.counter_tracks,
              [](RowBinder& s, const CounterTrack& x) {
                s.bind(2, as_int(x.name)).bind(3, x.pid).bind(4, as_int(x.unit));
              });
  write_blocks(statements_->counter_block, run.counter_values, written_.counter_values, run.counter_values_dropped,
               encode_counter_block);
}

// The rows new since the last commit, in blocks of kRowsPerStackBlock from
// row `first_row` on, block k holding those from first_row + k x
// kRowsPerStackBlock: the last block, which new rows join until it is full,
// is written again (REPLACE, by its id) with them. A recorder meets most of
// its code in its first seconds, and then adds a stack now and then: a block
// per commit would make thousands of blocks of a row or two.
template <typename Row, typename Encode>
void RunWriter::write_growing_blocks(SqliteStatement& replace, const std::vector<Row>& rows, size_t written,
                                     size_t first_row, Encode encode) {
  const size_t from = std::max(written, first_row);
  if (rows.size() <= from) return;
  size_t block = (from - first_row) / kRowsPerStackBlock;
  for (size_t first = first_row + block * kRowsPerStackBlock; first < rows.size(); first += kRowsPerStackBlock) {
    size_t count = std::min(kRowsPerStackBlock, rows.size() - first);
    replace.bind(1, static_cast<int64_t>(block++)).bind(2, static_cast<int64_t>(first));
    replace.bind(3, static_cast<int64_t>(count));
    replace.bind_blob(4, encode(std::span<const Row>(rows.data() + first, count), first)).run();
  }
}

// For each run of up to kRowsPerRange flows new since the last commit: the
// least and greatest `key` (what a window selects the table's rows by) and
// the latest `latest`.
template <typename Row, typename Key, typename Latest>
void RunWriter::write_row_ranges(const char* table, const std::vector<Row>& rows, size_t from, Key key,
                                 Latest latest) {
  for (size_t first = from; first < rows.size(); first += kRowsPerRange) {
    size_t count = std::min(kRowsPerRange, rows.size() - first);
    std::span<const Row> range(rows.data() + first, count);
    auto [low, high] = std::ranges::minmax_element(range, {}, key);
    auto last = std::ranges::max_element(range, {}, latest);
    SqliteStatement& row = statements_->row_range;
    row.bind_text(1, table).bind(2, static_cast<int64_t>(first)).bind(3, static_cast<int64_t>(count));
    row.bind(4, static_cast<int64_t>(std::invoke(key, *low))).bind(5, static_cast<int64_t>(std::invoke(key, *high)));
    row.bind(6, static_cast<int64_t>(std::invoke(latest, *last))).run();
  }
}

// The rows new since the last commit, in blocks of up to kRowsPerBlock: a
// recorder's commit of a second is one block or a few. A block's start_ns and
// end_ns bound its rows' block_time; a block of spans also keeps its latest
// end, where the run's extent ends.
template <typename Row, typename Encode>
void RunWriter::write_blocks(SqliteStatement& insert, const std::vector<Row>& rows, size_t from, size_t dropped,
                             Encode encode) {
  for (size_t first = from; first < rows.size(); first += kRowsPerBlock) {
    size_t count = std::min(kRowsPerBlock, rows.size() - first);
    std::span<const Row> block(rows.data() + first, count);
    auto time = [](const Row& row) { return block_time(row); };
    auto [earliest, latest] = std::ranges::minmax_element(block, {}, time);
    insert.bind(1, static_cast<int64_t>(dropped + first)).bind(2, static_cast<int64_t>(count));
    insert.bind(3, time(*earliest)).bind(4, time(*latest)).bind_blob(5, encode(block));
    if constexpr (std::is_same_v<Row, Span>) insert.bind(6, std::ranges::max_element(block, {}, &Span::end_ns)->end_ns);
    insert.run();
  }
}

void RunWriter::release_written(Run& run) {
  // Only what the file holds; the vectors' capacity stays, for the next second's rows.
  auto drop = [](auto& rows, size_t& written, size_t& dropped) {
    rows.erase(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(written));
    dropped += written;
    written = 0;
  };
  drop(run.samples, written_.samples, run.samples_dropped);
  drop(run.counter_values, written_.counter_values, run.counter_values_dropped);
}

// Processes end, threads get renamed and metadata grows during a recording:
// the rows of these small tables that changed since the last commit are
// written again (most commits change one metadata value, the sample period).
void RunWriter::write_mutable_rows(const Run& run) {
  Statements& st = *statements_;
  replace_changed_rows(st.processes, run.processes, written_processes_, [](RowBinder& s, const Process& p) {
    s.bind(2, p.pid).bind(3, p.parent_pid).bind(4, as_int(p.command));
    s.bind(5, p.start_ns).bind(6, p.end_ns).bind(7, int64_t{p.exit_status});
  });
  replace_changed_rows(st.threads, run.threads, written_threads_, [](RowBinder& s, const Thread& t) {
    s.bind(2, t.pid).bind(3, t.tid).bind(4, as_int(t.name));
  });
  for (const auto& [key, value] : run.metadata) {
    auto [written, added] = written_metadata_.try_emplace(key, value);
    if (!added && written->second == value) continue;
    written->second = value;
    st.metadata.bind_text(1, key).bind_text(2, value).run();
  }
}

void save_run(const Run& run, const std::string& path) { RunWriter(path).commit(run); }

}  // namespace stepscope
