// Persisting a Run as one SQLite file (schema: docs/run-format.md).
//
// RunWriter appends what is new in a Run since its last commit, in one
// transaction, so a recorder can commit every second and a writer killed at
// any moment leaves a file that opens and holds every committed row.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "run/run.hpp"
#include "run/run_window.hpp"

namespace stepscope {

class RunTrimmer;
class SqliteDb;
class SqliteStatement;

class RunWriter {
 public:
  // Creates (or truncates) the file at `path` and writes the schema.
  explicit RunWriter(const std::string& path);
  ~RunWriter();
  RunWriter(const RunWriter&) = delete;
  RunWriter& operator=(const RunWriter&) = delete;

  // Writes every row of `run` not yet written, plus the current processes,
  // threads and metadata (which may have changed), as one transaction.
  // `run` must be the same Run, only grown, at each call, but for what
  // release_written takes away.
  void commit(const Run& run);

  // Drops from `run` the samples and counter values the last commit wrote
  // (a recorder's Run: nothing reads its samples before the recording ends,
  // and its live readers its counter values as they come), counting them in
  // Run::samples_dropped and counter_values_dropped, so that a recorder's
  // memory stays flat however long it records.
  void release_written(Run& run);

  // From now on, keeps the file under `max_bytes` (record --max-size,
  // run_trimmer.hpp): trim_to_limit trims it once a commit has taken it over.
  void limit_size(uint64_t max_bytes);

  // After a commit, when the file is over its limit: deletes its oldest rows,
  // never those of the newest commit that wrote any, and adds what it dropped
  // to the file's metadata, and to `run`'s, so that later commits agree.
  // Nothing without a limit.
  void trim_to_limit(Run& run);

 private:
  struct Written {
    size_t strings = 0, frames = 0, stacks = 0, samples = 0, spans = 0, flows = 0,
           counter_tracks = 0, counter_values = 0;
  };
  struct Statements;
  void write_new_rows(const Run& run);
  template <typename Row, typename Encode>
  void write_blocks(SqliteStatement& insert, const std::vector<Row>& rows, size_t from, size_t dropped,
                    Encode encode);
  template <typename Row, typename Encode>
  void write_growing_blocks(SqliteStatement& replace, const std::vector<Row>& rows, size_t written,
                            size_t first_row, Encode encode);
  // Bounds a block's deflated columns to a few tens of kB, and what a window
  // decodes beyond its edges.
  static constexpr size_t kRowsPerBlock = 4096;
  template <typename Row, typename Key, typename Latest>
  void write_row_ranges(const char* table, const std::vector<Row>& rows, size_t from, Key key, Latest latest);
  // A whole run written at once (an import) still reads a window in pieces.
  static constexpr size_t kRowsPerRange = 4096;
  void write_mutable_rows(const Run& run);
  // The earliest time the rows new in `run` since the last commit reach
  // (samples' times, spans' ends, counter values' times), if any are new.
  std::optional<int64_t> new_rows_reach_from(const Run& run) const;

  // Declared before the statements, so that they are finalized before the
  // connection closes.
  std::unique_ptr<SqliteDb> db_;
  // Prepared once per file, not once per commit.
  std::unique_ptr<Statements> statements_;
  std::unique_ptr<RunTrimmer> trimmer_;  // with a limit only
  // Where the rows of the newest commit that wrote any reach back to: no
  // trim deletes what ends there or later.
  int64_t newest_rows_from_ns_ = std::numeric_limits<int64_t>::min();
  // Counts of rows in the Run's vectors (after those dropped) the file holds.
  Written written_;
  // What the file holds of the tables rewritten in place, to write only
  // the rows that changed.
  std::vector<Process> written_processes_;
  std::vector<Thread> written_threads_;
  std::map<std::string, std::string> written_metadata_;
};

// Writes a whole Run in one go.
void save_run(const Run& run, const std::string& path);

// Reading a run file, whole or a window of it. Throws InputError naming the
// file when it is missing, is not a stepscope run, has a schema version this
// build does not read, or is inconsistent.
class RunFileReader {
 public:
  explicit RunFileReader(const std::string& path);
  ~RunFileReader();
  RunFileReader(const RunFileReader&) = delete;
  RunFileReader& operator=(const RunFileReader&) = delete;

  Run load();
  // What keep_window(load(), window) holds. A file of schema 3 is read only
  // within the window, through its indexes on time; an older one whole.
  Run load(TimeRange window);
  // What run_extent(load()) says, from the indexes where the file has them.
  std::optional<TimeRange> extent();
  // Whether the file has those indexes (schema 3 on): without them, extent()
  // and a window read the whole run.
  bool has_time_index() const;
  // The file's size when opened.
  uint64_t file_bytes() const;

  // The most bytes of memory the reader reserves for a table's rows kept in
  // compressed blocks, per byte of the file: such rows take up to 24 times
  // as much memory as file (an idle thread's samples: 1 byte a sample
  // stored, 24 in memory). What a file's size alone bounds its reading by.
  static constexpr uint64_t kMostRowBytesPerFileByte = 64;

  // How many rows of its large tables load() (or load(window)) would hold,
  // as the file claims them, before reading any: what its blocks hold (of a
  // window: the blocks that meet it), a table of rows (older schemas) whole.
  // A bound for what the reading will need, not checked: the reading checks.
  struct RowCounts {
    uint64_t samples = 0, spans = 0, flows = 0, counter_values = 0;
    // What those rows take in a Run's vectors.
    uint64_t bytes_in_memory() const;
  };
  RowCounts row_counts(const std::optional<TimeRange>& window = std::nullopt);

 private:
  class Reader;
  std::unique_ptr<Reader> reader_;
};

// RunFileReader(path).load().
Run load_run(const std::string& path);

}  // namespace stepscope
