// Loading a run file, whole or a window of it. The file may come from
// anywhere (another version of stepscope, a hand-edited copy, a truncated
// download), so every id is checked before the Run is handed to analyses
// that index with it.
#include <algorithm>
#include <cstddef>
#include <exception>
#include <filesystem>
#include <functional>
#include <limits>
#include <new>
#include <span>
#include <system_error>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "run/run_file.hpp"
#include "run/counter_block.hpp"
#include "run/metadata_table.hpp"
#include "run/run_schema.hpp"
#include "run/sample_block.hpp"
#include "run/span_block.hpp"
#include "run/stack_block.hpp"
#include "run/sqlite_db.hpp"
#include "run/trimmed_run.hpp"
#include "util/demangle.hpp"
#include "util/error.hpp"

namespace stepscope {

namespace {

// A block claiming more is corrupt (the writer makes blocks of 4096): the
// bound keeps a bad count from asking for gigabytes.
constexpr int64_t kMostRowsInABlock = int64_t{1} << 20;

// A table of blocks: its name, the column that numbers its first row, and
// what its rows are, for errors.
struct BlockTable {
  const char* name;
  const char* first_row;
  const char* row;
  const char* rows;
};
constexpr BlockTable kSampleBlocks{"sample_blocks", "first_sample", "sample", "samples"};
constexpr BlockTable kCounterBlocks{"counter_blocks", "first_value", "counter value", "counter values"};
constexpr BlockTable kSpanBlocks{"span_blocks", "first_span", "span", "spans"};
constexpr BlockTable kFrameBlocks{"frame_blocks", "first_frame", "frame", "frames"};
constexpr BlockTable kStackBlocks{"stack_blocks", "first_stack", "stack", "stacks"};

// Keys from low to high, both included.
struct KeyRange {
  int64_t low, high;
};

// Room is reserved for a table's rows before they are read (no copies as a
// vector grows, and each page touched once): as many as the file claims,
// but for at most this many bytes of memory per byte of the file, so that a
// corrupt count costs no more than reserved, untouched memory of a few
// times the file's size, and is found out as the rows are read.
constexpr uint64_t kMostReservedPerFileByte = 4;
// The same for rows kept in compressed blocks (RunFileReader::
// kMostRowBytesPerFileByte); where even that cannot be had, the rows are
// read without.
constexpr uint64_t kMostReservedPerBlockFileByte = RunFileReader::kMostRowBytesPerFileByte;

// From this size on a run file's samples, spans and counters are read side
// by side: below it two more connections and threads cost more than they
// save (a job of 64 runs of 0.5 MB: 0.22 s read one after another, 0.24 s
// side by side; a 136 MB file's window: 1.65 s, 1.20 s side by side).
constexpr uint64_t kSideBySideFromBytes = uint64_t{8} << 20;

// Which rows of a table a window selects: those whose `key`, the query's
// column `column`, lies in [low, high].
struct WindowSelect {
  const char* key;
  int column;
  int64_t low, high;
};

// A run of rows of a table, ids first to last, whose keys lie in [low, high] (row_ranges).
struct RowRange {
  int64_t first, last, low, high;
};

// The runs of a table's rows a window may find rows in, and the table's
// first row (0 but in a trimmed run).
struct TableRanges {
  std::vector<RowRange> overlapping;
  int64_t first_id = 0;
};

constexpr uint64_t kMostBytesMapped = 64 << 20;
constexpr int64_t kEarliest = std::numeric_limits<int64_t>::min();
constexpr int64_t kLatest = std::numeric_limits<int64_t>::max();

// Runs each task, the last on the calling thread and the others on threads
// of their own, and returns once all have finished: each task's exception,
// or null, in the order given. A task that gets no thread runs on the
// caller's.
std::vector<std::exception_ptr> side_by_side(const std::vector<std::function<void()>>& tasks) {
  std::vector<std::exception_ptr> errors(tasks.size());
  auto run = [&tasks, &errors](size_t task) {
    try {
      tasks[task]();
    } catch (...) {
      errors[task] = std::current_exception();
    }
  };
  {
    std::vector<std::jthread> helpers;
    helpers.reserve(tasks.size());
    for (size_t task = 0; task + 1 < tasks.size(); ++task) {
      try {
        helpers.emplace_back(run, task);
      } catch (const std::system_error&) {
        run(task);
      }
    }
    if (!tasks.empty()) run(tasks.size() - 1);
  }  // joins the helpers
  return errors;
}

}  // namespace

class RunFileReader::Reader {
 public:
  explicit Reader(const std::string& path) : db_(open(path)), file_bytes_(size_of(path)) {
    // A small file is mapped, not copied a page at a time: its small tables
    // are most of it, read row by row. A large one is mostly blocks, read
    // once each, and mapping it would count the pages around every one
    // touched (the kernel maps them in 64 KiB at a fault) in the reader's
    // memory: 350 MB more for a ten-minute window of a day.
    if (file_bytes_ <= kMostBytesMapped) db_.exec(fmt::format("PRAGMA mmap_size={}", kMostBytesMapped).c_str());
    check_identity();
    if (schema_version_ >= 3) trimmed_before_ = read_trimmed_before();
  }

  // The whole run, or what keep_window would keep of it.
  Run read(const std::optional<TimeRange>& window) {
    if (schema_version_ < 3 && (window || whole_)) {
      Run run = whole_ ? std::move(*std::exchange(whole_, std::nullopt)) : read(std::nullopt);
      if (window) keep_window(run, *window);
      return run;
    }
    Run run;
    read_strings(run);
    read_metadata(run);
    read_processes_and_threads(run);
    read_frames_and_stacks(run);
    try {
      read_large_tables(run, kept_part(window));
    } catch (const InputError&) {
      check_not_trimmed_meanwhile();  // the better explanation of rows gone missing
      throw;
    }
    check_not_trimmed_meanwhile();
    demangle_kernel_names(run);
    return run;
  }

  std::optional<TimeRange> extent() {
    if (schema_version_ < 3) {  // no index: the run is read whole, once, for this and the next read
      whole_ = read(std::nullopt);
      return run_extent(*whole_);
    }
    if (trimmed_before_) return trimmed_extent(*trimmed_before_);
    // An entry per block and a row per commit: small scans.
    std::string sql = fmt::format(
        "SELECT min(first), max(last) FROM ("
        " SELECT min(start_ns) AS first, max(end_ns) AS last FROM sample_blocks UNION ALL {} UNION ALL {})",
        schema_version_ >= 5 ? "SELECT min(start_ns), max(latest_end_ns) FROM span_blocks"
                             : "SELECT min(low), max(latest_ns) FROM row_ranges WHERE rows = 'spans'",
        schema_version_ >= 4 ? "SELECT min(start_ns), max(end_ns) FROM counter_blocks"
                             : "SELECT min(low), max(latest_ns) FROM row_ranges WHERE rows = 'counter_values'");
    SqliteStatement ends(db_, sql.c_str());
    if (!ends.step() || ends.column_is_null(0)) return std::nullopt;
    TimeRange extent{ends.column_int(0), ends.column_int(1)};
    Run metadata_only;
    read_metadata(metadata_only);
    if (auto start = metadata_only.metadata_int("start_clock_ns"); start && *start < extent.from_ns) {
      extent.from_ns = *start;
    }
    return extent;
  }

  bool has_time_index() const { return schema_version_ >= 3; }
  uint64_t file_bytes() const { return file_bytes_; }

  RowCounts row_counts(const std::optional<TimeRange>& window) {
    // A table of rows is counted whole, and only for a whole read: a window
    // reads a part of it that only its row_ranges would tell.
    auto rows = [&](const char* table) {
      return window ? 0 : static_cast<uint64_t>(std::max<int64_t>(rows_by_id(db_, table), 0));
    };
    RowCounts counts;
    counts.samples = schema_version_ >= 3 ? block_rows(kSampleBlocks, window) : rows("samples");
    counts.spans = schema_version_ >= 5 ? block_rows(kSpanBlocks, window) : rows("spans");
    counts.counter_values = schema_version_ >= 4 ? block_rows(kCounterBlocks, window) : rows("counter_values");
    counts.flows = rows("flows");
    return counts;
  }

 private:
  static SqliteDb open(const std::string& path) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) {
      throw InputError(fmt::format("cannot open run {}: no such file", path));
    }
    return SqliteDb(path, SqliteDb::Mode::kReadExisting);
  }

  static uint64_t size_of(const std::string& path) {
    std::error_code ec;
    uintmax_t bytes = std::filesystem::file_size(path, ec);
    return ec ? 0 : bytes;
  }

  // A trimmed run (record --max-size) holds what was recorded from
  // trimmed_before_ns on: its rows that lie before it, left in the file in
  // runs of rows that reach past it, are read as trimmed too, so that it
  // reads as a window from there would.
  std::optional<int64_t> read_trimmed_before() { return metadata_table_int(db_, trim_keys::kTrimmedBeforeNs); }

  // A recorder that trims its file while another process reads it deletes
  // rows under the read: an error saying so, not a run missing them.
  void check_not_trimmed_meanwhile() {
    if (schema_version_ < 3 || read_trimmed_before() == trimmed_before_) return;
    throw InputError(fmt::format("{}: its recorder trimmed it (record --max-size) while it was being read; read it "
                                 "again", db_.path()));
  }

  // The rows a read keeps: those in `window`, from trimmed_before_ns on. A
  // whole trimmed run is read row by row (each id checked) from its first
  // rows, which the cut at trimmed_before_ns keeps.
  struct Kept {
    std::optional<TimeRange> window;  // read through the indexes; nullopt: every row
    int64_t from_ns = kEarliest;      // without a window, the rows before it are left out
  };

  Kept kept_part(const std::optional<TimeRange>& window) const {
    if (!trimmed_before_) return {window};
    if (!window) return {std::nullopt, *trimmed_before_};
    return {TimeRange{std::max(window->from_ns, *trimmed_before_), window->to_ns}};
  }

  // From trimmed_before_ns (where the run starts, as a recording starts at
  // its start_clock_ns) to the latest time of a row not before it: blocks
  // end with a sample's or a counter value's time, and
  // blocks (or runs) of spans that start after it with a span's end; those
  // that start before it are looked into.
  std::optional<TimeRange> trimmed_extent(int64_t from_ns) {
    std::string sql = fmt::format(
        "SELECT max(t) FROM ("
        " SELECT max(end_ns) AS t FROM sample_blocks WHERE end_ns >= ?1 UNION ALL {} UNION ALL {})",
        schema_version_ >= 4
            ? "SELECT max(end_ns) FROM counter_blocks WHERE end_ns >= ?1"
            : "SELECT max(latest_ns) FROM row_ranges WHERE rows = 'counter_values' AND latest_ns >= ?1",
        schema_version_ >= 5
            ? "SELECT max(latest_end_ns) FROM span_blocks WHERE start_ns >= ?1"
            : "SELECT max(latest_ns) FROM row_ranges WHERE rows = 'spans' AND low >= ?1"
              " UNION ALL SELECT max(s.end_ns) FROM row_ranges r JOIN spans s"
              "  ON s.id BETWEEN r.first_id AND r.first_id + r.count - 1"
              "  WHERE r.rows = 'spans' AND r.low < ?1 AND s.start_ns >= ?1");
    SqliteStatement ends(db_, sql.c_str());
    ends.bind(1, from_ns);
    std::optional<int64_t> latest;
    if (ends.step() && !ends.column_is_null(0)) latest = ends.column_int(0);
    if (schema_version_ >= 5) latest = std::max(latest, latest_end_of_spans_from(from_ns));
    if (!latest) return std::nullopt;
    return TimeRange{from_ns, *latest};
  }

  // The latest end of the spans that start from `from_ns` on in the blocks
  // that also hold spans before it: the blocks' latest end may be a trimmed
  // span's.
  std::optional<int64_t> latest_end_of_spans_from(int64_t from_ns) {
    SqliteStatement blocks(db_, "SELECT id, count, data FROM span_blocks WHERE start_ns < ?1 AND end_ns >= ?1");
    blocks.bind(1, from_ns);
    std::optional<int64_t> latest;
    while (blocks.step()) {
      std::vector<Span> spans;
      // Only times matter here: the read that follows checks the strings.
      std::string error = decode_span_block(blocks.column_blob(2), static_cast<size_t>(blocks.column_int(1)),
                                            std::numeric_limits<size_t>::max(), spans);
      if (!error.empty()) bad_row("span_blocks", blocks.column_int(0), error);
      for (const Span& span : spans) {
        if (span.start_ns >= from_ns) latest = std::max(latest.value_or(span.end_ns), span.end_ns);
      }
    }
    return latest;
  }

  [[noreturn]] void bad_row(const char* table, int64_t id, const std::string& what) const {
    throw InputError(fmt::format("{}: table {} row {}: {}", db_.path(), table, id, what));
  }

  // Runs `sql` (which selects id first) and calls on_row for each row after
  // checking ids are 0, 1, 2, ... as the writer numbers them.
  template <typename OnRow>
  void for_each_row(SqliteDb& db, const char* table, const char* sql, int64_t first_id, OnRow on_row) const {
    SqliteStatement select(db, sql);
    int64_t expected = first_id;
    while (select.step()) {
      int64_t id = select.column_int(0);
      if (id != expected) bad_row(table, id, fmt::format("expected row id {}", expected));
      on_row(select, id);
      ++expected;
    }
  }

  // The rows `window` selects of `columns` (id first) of `table`, in id
  // order, or all of them, checked as for_each_row does, when there is no
  // window. A window reads the runs of rows that row_ranges says may hold
  // keys in it, and checks that every row of those runs holds what it says.
  // Before the first row, on_rows is told how many rows the file claims
  // there are at most, unchecked, to reserve room for them.
  template <typename OnRows, typename OnRow>
  void for_each_row(SqliteDb& db, const char* table, const char* columns, const std::optional<WindowSelect>& window,
                    OnRows on_rows, OnRow on_row) const {
    if (!window) {
      // A trimmed table starts where its runs of rows do, and they must still cover it.
      int64_t first_id = trimmed_before_ ? row_ranges(db, table, kLatest, kEarliest).first_id : 0;
      on_rows(static_cast<uint64_t>(std::max<int64_t>(rows_by_id(db, table) - first_id, 0)));
      std::string sql = fmt::format("SELECT {} FROM {} ORDER BY id", columns, table);
      return for_each_row(db, table, sql.c_str(), first_id, on_row);
    }
    std::vector<RowRange> ranges = row_ranges(db, table, window->low, window->high).overlapping;
    uint64_t claimed = 0;  // unsigned: a corrupt range wraps around, but is no undefined behaviour
    for (const RowRange& range : ranges) {
      claimed += static_cast<uint64_t>(range.last) - static_cast<uint64_t>(range.first) + 1;
    }
    on_rows(claimed);
    std::string sql = fmt::format("SELECT {} FROM {} WHERE id BETWEEN ?1 AND ?2 ORDER BY id", columns, table);
    SqliteStatement select(db, sql.c_str());
    for (const RowRange& range : ranges) {
      select.reset();
      select.bind(1, range.first).bind(2, range.last);
      while (select.step()) {
        int64_t id = select.column_int(0), key = select.column_int(window->column);
        if (key < range.low || key > range.high) {
          bad_row(table, id, fmt::format("{} {} outside its row range's {} to {}", window->key, key, range.low,
                                         range.high));
        }
        if (key >= window->low && key <= window->high) on_row(select, id);
      }
    }
  }

  // The runs of `table`'s rows whose keys may lie in [low, high]. The runs
  // must cover the table, each row once, or a window could miss rows: from
  // row 0, or in a trimmed run from its first run's first row.
  TableRanges row_ranges(SqliteDb& db, const char* table, int64_t low, int64_t high) const {
    SqliteStatement select(db,
                           "SELECT id, first_id, count, low, high FROM row_ranges WHERE rows = ? ORDER BY first_id");
    select.bind_text(1, table);
    TableRanges ranges;
    int64_t next = 0;
    for (bool first_run = true; select.step(); first_run = false) {
      int64_t first = select.column_int(1), count = select.column_int(2);
      if (first_run && trimmed_before_ && first > 0) ranges.first_id = next = first;
      if (first != next || count < 1) {
        bad_row("row_ranges", select.column_int(0), fmt::format("{} rows {} to {} after row {}", table, first,
                                                                 first + count - 1, next - 1));
      }
      next = first + count;
      RowRange range{first, next - 1, select.column_int(3), select.column_int(4)};
      if (range.high >= low && range.low <= high) ranges.overlapping.push_back(range);
    }
    check_covered(db, table, ranges.first_id, next);
    return ranges;
  }

  // Rows before `first` or from `end` on would be rows no run covers.
  void check_covered(SqliteDb& db, const char* table, int64_t first, int64_t end) const {
    int64_t rows = rows_by_id(db, table);
    if (first == 0) {
      if (rows == end) return;
      throw InputError(fmt::format("{}: table row_ranges covers {} rows of {}, which has {}", db_.path(), end,
                                   table, rows));
    }
    if (int64_t least = least_id(db, table); rows != end || least < first) {
      throw InputError(fmt::format("{}: table row_ranges covers rows {} to {} of {}, which has rows {} to {}",
                                   db_.path(), first, end - 1, table, least, rows - 1));
    }
  }

  static int64_t least_id(SqliteDb& db, const char* table) {
    std::string sql = fmt::format("SELECT coalesce(min(id), 0) FROM {}", table);
    SqliteStatement least(db, sql.c_str());
    return least.step() ? least.column_int(0) : 0;
  }

  // The rows of `table` if its ids are 0, 1, 2, ... (its last id plus one):
  // a look at the table's last row, not a count of them all.
  static int64_t rows_by_id(SqliteDb& db, const char* table) {
    std::string sql = fmt::format("SELECT coalesce(max(id) + 1, 0) FROM {}", table);
    SqliteStatement rows(db, sql.c_str());
    return rows.step() ? rows.column_int(0) : 0;
  }

  // Reserves room for `claimed` rows, at most `per_file_byte` bytes for each
  // of the file's (kMostReservedPerFileByte).
  template <typename Row>
  void reserve(std::vector<Row>& rows, uint64_t claimed, uint64_t per_file_byte = kMostReservedPerFileByte) const {
    try {
      rows.reserve(static_cast<size_t>(std::min(claimed, file_bytes_ * per_file_byte / sizeof(Row))));
    } catch (const std::bad_alloc&) {
      // The vector grows as rows are read.
    }
  }

  void check_identity() {
    std::string format, version;
    try {
      SqliteStatement select(db_, "SELECT key, value FROM meta");
      while (select.step()) {
        std::string key = select.column_text(0);
        if (key == "format") format = select.column_text(1);
        if (key == "schema_version") version = select.column_text(1);
      }
    } catch (const InputError&) {
      throw InputError(fmt::format("{} is not a stepscope run (not an SQLite database with a "
                                   "meta table)", db_.path()));
    }
    if (format != run_schema::kFormatName) {
      throw InputError(fmt::format("{} is not a stepscope run (meta format is \"{}\")", db_.path(),
                                   format));
    }
    for (int readable = kOldestReadableRunSchemaVersion; readable <= kRunSchemaVersion; ++readable) {
      if (version == std::to_string(readable)) {
        schema_version_ = readable;
        return;
      }
    }
    throw InputError(fmt::format("{} has run schema version {}; this stepscope reads versions {} to {}",
                                 db_.path(), version, kOldestReadableRunSchemaVersion, kRunSchemaVersion));
  }

  // `strings`: how many the file holds, or a reference to a string interned
  // while reading (a demangled kernel name) would pass for one of the file's.
  StringId string_ref(size_t strings, const char* table, int64_t row, int64_t id) const {
    if (id < 0 || static_cast<size_t>(id) >= strings) {
      bad_row(table, row, fmt::format("string {} does not exist", id));
    }
    return static_cast<StringId>(id);
  }

  StringId string_ref(const Run& run, const char* table, int64_t row, int64_t id) const {
    return string_ref(run.strings.size(), table, row, id);
  }

  void read_strings(Run& run) {
    for_each_row(db_, "strings", "SELECT id, value FROM strings ORDER BY id", 0,
                 [&](SqliteStatement& s, int64_t id) {
                   std::string value = s.column_text(1);
                   if (id == 0) {
                     if (!value.empty()) bad_row("strings", 0, "string 0 must be empty");
                     return;  // the table's own empty string
                   }
                   run.strings.append_unique(std::move(value));
                 });
  }

  void read_metadata(Run& run) {
    SqliteStatement select(db_, "SELECT key, value FROM metadata");
    while (select.step()) run.metadata[select.column_text(0)] = select.column_text(1);
  }

  void read_processes_and_threads(Run& run) {
    for_each_row(db_, "processes",
                 "SELECT id, pid, parent_pid, command, start_ns, end_ns, exit_status FROM processes ORDER BY id", 0,
                 [&](SqliteStatement& s, int64_t id) {
                   run.processes.push_back({s.column_int(1), s.column_int(2),
                                            string_ref(run, "processes", id, s.column_int(3)),
                                            s.column_int(4), s.column_int(5),
                                            static_cast<int32_t>(s.column_int(6))});
                 });
    for_each_row(db_, "threads", "SELECT id, pid, tid, name FROM threads ORDER BY id", 0,
                 [&](SqliteStatement& s, int64_t id) {
                   run.threads.push_back({s.column_int(1), s.column_int(2),
                                          string_ref(run, "threads", id, s.column_int(3))});
                 });
  }

  void read_frames_and_stacks(Run& run) {
    if (schema_version_ < 6) return read_frame_and_stack_rows(run);
    std::vector<Frame> frames;
    read_stack_table_blocks(kFrameBlocks, 0, frames,
                            [strings = run.strings.size()](std::string_view data, size_t count, int64_t,
                                                           std::vector<Frame>& out) {
                              return decode_frame_block(data, count, strings, out);
                            });
    for (size_t id = 0; id < frames.size(); ++id) add_frame(run, frames[id], static_cast<int64_t>(id));
    std::vector<StackNode> nodes;
    read_stack_table_blocks(kStackBlocks, 1, nodes,
                            [frames = run.frames.size()](std::string_view data, size_t count, int64_t first,
                                                         std::vector<StackNode>& out) {
                              return decode_stack_block(data, count, static_cast<StackId>(first), frames, out);
                            });
    for (const StackNode& node : nodes) run.stacks.append_loaded(node);
  }

  // The rows of a table of frames or stacks, from row `first_row` on: its
  // blocks follow each other without a gap, and `decode` checks what their
  // rows refer to.
  template <typename Row, typename Decode>
  void read_stack_table_blocks(const BlockTable& table, int64_t first_row, std::vector<Row>& rows,
                               Decode decode) {
    int64_t next_row = first_row;
    std::string sql = fmt::format("SELECT id, {}, count, data FROM {} ORDER BY id", table.first_row, table.name);
    for_each_row(db_, table.name, sql.c_str(), 0, [&](SqliteStatement& s, int64_t id) {
      int64_t first = s.column_int(1), count = s.column_int(2);
      if (first != next_row) bad_row(table.name, id, fmt::format("expected first {} {}", table.row, next_row));
      if (count < 1 || count > kMostRowsInABlock || first + count > int64_t{UINT32_MAX}) {
        bad_row(table.name, id, fmt::format("a count of {} {}", count, table.rows));
      }
      std::string error = decode(s.column_blob(3), static_cast<size_t>(count), first, rows);
      if (!error.empty()) bad_row(table.name, id, error);
      next_row = first + count;
    });
  }

  // A frame read from the file, the id-th: interned, so that the run's
  // frames can be looked up, and the file's id must be the one it gets.
  void add_frame(Run& run, const Frame& frame, int64_t id) const {
    if (run.frames.intern(frame) != static_cast<FrameId>(id)) bad_row("frames", id, "duplicate frame");
  }

  // Schema 1 to 5: a row per frame and per stack.
  void read_frame_and_stack_rows(Run& run) {
    for_each_row(db_, "frames", "SELECT id, function, file, line, kind FROM frames ORDER BY id", 0,
                 [&](SqliteStatement& s, int64_t id) {
                   int64_t kind = s.column_int(4);
                   if (kind < 0 || kind > static_cast<int64_t>(FrameKind::kMarker)) {
                     bad_row("frames", id, fmt::format("unknown frame kind {}", kind));
                   }
                   add_frame(run,
                             {string_ref(run, "frames", id, s.column_int(1)),
                              string_ref(run, "frames", id, s.column_int(2)), static_cast<int32_t>(s.column_int(3)),
                              static_cast<FrameKind>(kind)},
                             id);
                 });
    for_each_row(db_, "stacks", "SELECT id, parent, frame FROM stacks ORDER BY id", 1,
                 [&](SqliteStatement& s, int64_t id) {
                   int64_t parent = s.column_int(1), frame = s.column_int(2);
                   if (parent < 0 || parent >= id) {
                     bad_row("stacks", id, fmt::format("parent {} does not precede it", parent));
                   }
                   if (frame < 0 || static_cast<size_t>(frame) >= run.frames.size()) {
                     bad_row("stacks", id, fmt::format("frame {} does not exist", frame));
                   }
                   run.stacks.append_loaded({static_cast<StackId>(parent), static_cast<FrameId>(frame)});
                 });
  }

  // Samples, spans with their flows, and counters refer to what was read
  // before them (strings, stacks) but not to each other, so in a file of
  // kSideBySideFromBytes or more each is read on a thread and a connection of
  // its own, into its own vectors of the Run (a smaller file: one after
  // another on this connection, in the same order).
  // What they are checked against is fixed before they start: nothing is
  // interned meanwhile (kernel names are demangled afterwards), so they
  // share nothing they write.
  //
  // Each statement reads in a transaction of its own, as when one connection
  // read them all: a recorder committing between two statements adds rows
  // (it appends, and rewrites only processes, threads and metadata), so a
  // table read later may refer to rows an earlier one did not see; every
  // reference is checked, so that is an InputError naming the row, as it was.
  // The reads that refer to each other's rows (flows to spans, values to
  // tracks) stay in order on one connection.
  void read_large_tables(Run& run, const Kept& kept) {
    const size_t strings = run.strings.size(), stacks = run.stacks.size();
    if (file_bytes_ < kSideBySideFromBytes) {
      read_samples(db_, stacks, run.samples, kept);
      read_spans_and_flows(db_, strings, run.spans, run.flows, kept);
      read_counters(db_, strings, run.counter_tracks, run.counter_values, kept);
      return;
    }
    std::vector<std::exception_ptr> errors = side_by_side({
        [&] {
          SqliteDb db(db_.path(), SqliteDb::Mode::kReadExisting);
          read_samples(db, stacks, run.samples, kept);
        },
        [&] {
          SqliteDb db(db_.path(), SqliteDb::Mode::kReadExisting);
          read_spans_and_flows(db, strings, run.spans, run.flows, kept);
        },
        [&] { read_counters(db_, strings, run.counter_tracks, run.counter_values, kept); },
    });
    // The error a one-thread read met first: samples, spans, flows, then counters.
    for (const std::exception_ptr& error : errors) {
      if (error) std::rethrow_exception(error);
    }
  }

  void read_samples(SqliteDb& db, size_t stacks, std::vector<Sample>& samples, const Kept& kept) const {
    if (schema_version_ < 3) return read_sample_rows(db, stacks, samples);
    // A window keeps the samples before its end.
    std::optional<KeyRange> window;
    if (kept.window) window = KeyRange{kept.window->from_ns, kept.window->to_ns - 1};
    auto decode = [stacks](std::string_view data, size_t count, std::vector<Sample>& out) {
      return decode_sample_block(data, count, stacks, out);
    };
    read_blocks(db, kSampleBlocks, window, kept.from_ns, decode, samples);
  }

  // Reads the blocks of `table` whose times meet `window` (each block_time
  // kept lies in it), or every block, keeping the rows from `from_ns` on (a
  // trimmed run's start). `decode` appends a block's rows to a vector, or
  // says what is wrong with them; a block's rows must also lie between its
  // start_ns and end_ns, which a window read relies on. With `kept_ids`, the
  // file's id of each row kept goes there too. Returns the id after the last
  // block's rows.
  template <typename Row, typename Decode>
  int64_t read_blocks(SqliteDb& db, const BlockTable& table, const std::optional<KeyRange>& window, int64_t from_ns,
                      Decode decode, std::vector<Row>& rows, std::vector<int64_t>* kept_ids = nullptr) const {
    const KeyRange keep = window.value_or(KeyRange{from_ns, kLatest});
    const bool filter = window || trimmed_before_;
    auto kept = [&](const Row& row) {
      return !filter || (block_time(row) >= keep.low && block_time(row) <= keep.high);
    };
    // Blocks follow each other from the first: block 0 and row 0 but in a trimmed run.
    int64_t first_block = 0, next_row = 0;
    if (!window) std::tie(first_block, next_row) = first_block_and_row(db, table);
    // A block's rows are decoded in place, checked, then those outside the
    // window (or before a trimmed run's start) dropped.
    auto read_block = [&](SqliteStatement& s, int64_t id) {
      int64_t first = s.column_int(1), count = s.column_int(2);
      if (window ? first < next_row : first != next_row) {
        bad_row(table.name, id, fmt::format("expected first {} {}", table.row, next_row));
      }
      if (count < 1 || count > kMostRowsInABlock) {
        bad_row(table.name, id, fmt::format("a count of {} {}", count, table.rows));
      }
      next_row = first + count;
      size_t from = rows.size();
      std::string error = decode(s.column_blob(5), static_cast<size_t>(count), rows);
      if (!error.empty()) bad_row(table.name, id, error);
      check_block_times(table, id, std::span<const Row>(rows.begin() + static_cast<std::ptrdiff_t>(from), rows.end()),
                        {s.column_int(3), s.column_int(4)});
      if (!filter && !kept_ids) return;  // every row kept where it is
      size_t to = from;
      for (size_t i = from; i < rows.size(); ++i) {
        if (!kept(rows[i])) continue;
        if (kept_ids) kept_ids->push_back(first + static_cast<int64_t>(i - from));
        rows[to++] = rows[i];
      }
      rows.resize(to);
    };
    const std::string columns = fmt::format("SELECT id, {}, count, start_ns, end_ns, data FROM {}", table.first_row,
                                            table.name);
    auto reserve_for = [&](uint64_t claimed) {
      reserve(rows, claimed, kMostReservedPerBlockFileByte);
      if (kept_ids) reserve(*kept_ids, claimed, kMostReservedPerBlockFileByte);
    };
    if (!window) {
      reserve_for(claimed_rows(db, table, first_block, rows_by_id(db, table.name) - 1));
      for_each_row(db, table.name, fmt::format("{} ORDER BY id", columns).c_str(), first_block, read_block);
      return next_row;
    }
    // The blocks' ids from their index on time alone (a scan of the table
    // would read every block), then each block.
    std::string by_time = fmt::format("SELECT id FROM {} WHERE end_ns >= ? AND start_ns <= ?", table.name);
    SqliteStatement ids(db, by_time.c_str());
    ids.bind(1, window->low).bind(2, window->high);
    std::vector<int64_t> overlapping;
    while (ids.step()) overlapping.push_back(ids.column_int(0));
    std::sort(overlapping.begin(), overlapping.end());
    if (!overlapping.empty()) reserve_for(claimed_rows(db, table, overlapping.front(), overlapping.back()));
    SqliteStatement block(db, fmt::format("{} WHERE id = ?", columns).c_str());
    for (int64_t id : overlapping) {
      block.reset();
      if (block.bind(1, id).step()) read_block(block, id);
    }
    return next_row;
  }

  // The first block's id and first row: 0 and 0, but in a trimmed run.
  std::pair<int64_t, int64_t> first_block_and_row(SqliteDb& db, const BlockTable& table) const {
    if (!trimmed_before_) return {0, 0};
    std::string sql = fmt::format("SELECT id, {} FROM {} ORDER BY id LIMIT 1", table.first_row, table.name);
    SqliteStatement first(db, sql.c_str());
    if (!first.step()) return {0, 0};
    return {first.column_int(0), first.column_int(1)};
  }

  // The rows that blocks `first` to `last` (ids) claim to hold, unchecked:
  // from the first's first row to the end of the last's, as blocks follow
  // each other.
  static uint64_t claimed_rows(SqliteDb& db, const BlockTable& table, int64_t first, int64_t last) {
    std::string sql = fmt::format(
        "SELECT (SELECT {0} + count FROM {1} WHERE id = ?2) - (SELECT {0} FROM {1} WHERE id = ?1)", table.first_row,
        table.name);
    SqliteStatement ends(db, sql.c_str());
    ends.bind(1, first).bind(2, last);
    return ends.step() ? static_cast<uint64_t>(std::max<int64_t>(ends.column_int(0), 0)) : 0;
  }

  // A block's rows lie within its start and end, or a window would miss them.
  template <typename Row>
  void check_block_times(const BlockTable& table, int64_t id, std::span<const Row> rows, TimeRange span) const {
    for (const Row& row : rows) {
      if (block_time(row) < span.from_ns || block_time(row) > span.to_ns) {
        bad_row(table.name, id, fmt::format("a {} at {} ns outside the block's {} to {} ns", table.row,
                                            block_time(row), span.from_ns, span.to_ns));
      }
    }
  }

  // Schema 1 and 2: a row per sample.
  void read_sample_rows(SqliteDb& db, size_t stacks, std::vector<Sample>& samples) const {
    reserve(samples, static_cast<uint64_t>(std::max<int64_t>(rows_by_id(db, "samples"), 0)));
    for_each_row(db, "samples", "SELECT id, ts_ns, pid, tid, stack, state, gil FROM samples ORDER BY id", 0,
                 [&](SqliteStatement& s, int64_t id) {
                   int64_t stack = s.column_int(4), state = s.column_int(5);
                   if (stack < 0 || static_cast<size_t>(stack) >= stacks) {
                     bad_row("samples", id, fmt::format("stack {} does not exist", stack));
                   }
                   if (state < 0 || state > static_cast<int64_t>(ThreadState::kDiskWait)) {
                     bad_row("samples", id, fmt::format("unknown thread state {}", state));
                   }
                   int64_t pid = s.column_int(2), tid = s.column_int(3);
                   if (!fits_sample_id(pid) || !fits_sample_id(tid)) {
                     bad_row("samples", id, "a process or thread id out of range");
                   }
                   samples.push_back({s.column_int(1), static_cast<int32_t>(pid), static_cast<int32_t>(tid),
                                      static_cast<StackId>(stack), static_cast<ThreadState>(state),
                                      s.column_int(6) != 0});
                 });
  }

  // Spans keep the name a kernel has in the file: demangle_kernel_names
  // renames them.
  void read_spans_and_flows(SqliteDb& db, size_t strings, std::vector<Span>& spans, std::vector<Flow>& flows,
                            const Kept& kept) const {
    const std::optional<TimeRange>& window = kept.window;
    // A run read whole and untrimmed keeps every span: a span's file id is its
    // place in the Run. Otherwise the file's id of each span kept, ascending.
    const bool cut = window || trimmed_before_;
    std::vector<int64_t> span_ids;
    int64_t spans_end = 0;  // read whole: the file's last span id plus one
    if (schema_version_ >= 5) {
      // A window keeps the spans that start in it.
      std::optional<KeyRange> span_window;
      if (window) span_window = KeyRange{window->from_ns, window->to_ns - 1};
      auto decode = [strings](std::string_view data, size_t count, std::vector<Span>& out) {
        return decode_span_block(data, count, strings, out);
      };
      spans_end = read_blocks(db, kSpanBlocks, span_window, kept.from_ns, decode, spans, cut ? &span_ids : nullptr);
    } else {
      spans_end = read_span_rows(db, strings, spans, cut ? &span_ids : nullptr, kept);
    }
    // A window keeps the flows between the spans it keeps, and so does a
    // trimmed run: a span before its start, trimmed or not, ends a flow.
    auto span_ref = [&](int64_t row, int64_t span) -> std::optional<SpanId> {
      if (!cut) {
        if (span >= 0 && static_cast<uint64_t>(span) < spans.size()) return static_cast<SpanId>(span);
        bad_row("flows", row, fmt::format("span {} does not exist", span));
      }
      auto found = std::lower_bound(span_ids.begin(), span_ids.end(), span);
      if (found != span_ids.end() && *found == span) return static_cast<SpanId>(found - span_ids.begin());
      bool trimmed = trimmed_before_ && span >= 0 && span < spans_end;
      if (!window && !trimmed) bad_row("flows", row, fmt::format("span {} does not exist", span));
      return std::nullopt;
    };
    if (window && span_ids.empty()) return;
    std::optional<WindowSelect> flow_window;
    if (window) flow_window = WindowSelect{"from_span", 1, span_ids.front(), span_ids.back()};
    auto reserve_flows = [&](uint64_t claimed) { reserve(flows, claimed); };
    for_each_row(db, "flows", "id, from_span, to_span, kind", flow_window, reserve_flows,
                 [&](SqliteStatement& s, int64_t id) {
                   auto from = span_ref(id, s.column_int(1)), to = span_ref(id, s.column_int(2));
                   if (from && to) flows.push_back({*from, *to, string_ref(strings, "flows", id, s.column_int(3))});
                 });
  }

  // Schema 1 to 4: a row per span, and with `span_ids` the file's id of
  // each kept. Returns the file's last span id plus one.
  int64_t read_span_rows(SqliteDb& db, size_t strings, std::vector<Span>& spans, std::vector<int64_t>* span_ids,
                         const Kept& kept) const {
    const std::optional<TimeRange>& window = kept.window;
    // Version 1 had no correlation, bytes or detail columns.
    const char* columns = schema_version_ >= 2
                              ? "id, start_ns, end_ns, pid, tid, kind, name, correlation, bytes, detail"
                              : "id, start_ns, end_ns, pid, tid, kind, name, 0, 0, 0";
    std::optional<WindowSelect> span_window;
    if (window) span_window = WindowSelect{"start_ns", 1, window->from_ns, window->to_ns - 1};
    int64_t spans_end = 0;
    auto reserve_spans = [&](uint64_t claimed) {
      reserve(spans, claimed);
      if (span_ids) reserve(*span_ids, claimed);
    };
    for_each_row(db, "spans", columns, span_window, reserve_spans, [&](SqliteStatement& s, int64_t id) {
      int64_t kind = s.column_int(5);
      if (kind < 0 || kind >= kSpanKindCount) bad_row("spans", id, fmt::format("unknown span kind {}", kind));
      Span span{s.column_int(1), s.column_int(2), s.column_int(3), s.column_int(4),
                static_cast<SpanKind>(kind), string_ref(strings, "spans", id, s.column_int(6)),
                s.column_int(7), s.column_int(8), string_ref(strings, "spans", id, s.column_int(9))};
      spans_end = id + 1;
      if (span.start_ns < kept.from_ns) return;  // before a trimmed run's start
      spans.push_back(span);
      if (span_ids) span_ids->push_back(id);
    });
    return spans_end;
  }

  // Kernels of runs recorded before the GPU collector demangled their names:
  // demangled here, once per name, as a recording now names them. In span
  // order, as the spans were read, so the names get the ids they always got.
  static void demangle_kernel_names(Run& run) {
    std::unordered_map<StringId, StringId> kernel_names;
    for (Span& span : run.spans) {
      if (span.kind != SpanKind::kKernel) continue;
      auto [known, added] = kernel_names.try_emplace(span.name, span.name);
      if (added) known->second = run.strings.intern(demangled(run.strings.get(span.name)));
      span.name = known->second;
    }
  }

  void read_counters(SqliteDb& db, size_t strings, std::vector<CounterTrack>& tracks,
                     std::vector<CounterValue>& values, const Kept& kept) const {
    const std::optional<TimeRange>& window = kept.window;
    for_each_row(db, "counter_tracks", "SELECT id, name, pid, unit FROM counter_tracks ORDER BY id", 0,
                 [&](SqliteStatement& s, int64_t id) {
                   tracks.push_back({string_ref(strings, "counter_tracks", id, s.column_int(1)), s.column_int(2),
                                     string_ref(strings, "counter_tracks", id, s.column_int(3))});
                 });
    if (schema_version_ >= 4) {
      // A window keeps the values at its end too (run_window.hpp).
      std::optional<KeyRange> value_window;
      if (window) value_window = KeyRange{window->from_ns, window->to_ns};
      auto decode = [&tracks](std::string_view data, size_t count, std::vector<CounterValue>& out) {
        return decode_counter_block(data, count, tracks.size(), out);
      };
      read_blocks(db, kCounterBlocks, value_window, kept.from_ns, decode, values);
      return;
    }
    // Schema 1 to 3: a row per value.
    std::optional<WindowSelect> value_window;
    if (window) value_window = WindowSelect{"ts_ns", 2, window->from_ns, window->to_ns};
    auto reserve_values = [&](uint64_t claimed) { reserve(values, claimed); };
    for_each_row(db, "counter_values", "id, track, ts_ns, value", value_window, reserve_values,
                 [&](SqliteStatement& s, int64_t id) {
                   int64_t track = s.column_int(1);
                   if (track < 0 || static_cast<size_t>(track) >= tracks.size()) {
                     bad_row("counter_values", id, fmt::format("counter track {} does not exist", track));
                   }
                   int64_t ts = s.column_int(2);
                   if (ts < kept.from_ns) return;  // before a trimmed run's start
                   values.push_back({static_cast<CounterTrackId>(track), ts, s.column_double(3)});
                 });
  }

  // The rows the blocks of `table` claim, from the first block that meets
  // `window` to the last (every block without one): two lookups by id.
  uint64_t block_rows(const BlockTable& table, const std::optional<TimeRange>& window) {
    std::string sql = fmt::format("SELECT min(id), max(id) FROM {}", table.name);
    if (window) sql += " WHERE end_ns >= ?1 AND start_ns < ?2";
    SqliteStatement ids(db_, sql.c_str());
    if (window) ids.bind(1, window->from_ns).bind(2, window->to_ns);
    if (!ids.step() || ids.column_is_null(0)) return 0;
    return claimed_rows(db_, table, ids.column_int(0), ids.column_int(1));
  }

  SqliteDb db_;
  uint64_t file_bytes_;  // when opened: a bound on what reserve() believes
  int schema_version_ = kRunSchemaVersion;
  std::optional<Run> whole_;  // a file without indexes, read whole by extent()
  std::optional<int64_t> trimmed_before_;  // metadata trimmed_before_ns of a trimmed run, as it was when opened
};

RunFileReader::RunFileReader(const std::string& path) : reader_(std::make_unique<Reader>(path)) {}
RunFileReader::~RunFileReader() = default;
Run RunFileReader::load() { return reader_->read(std::nullopt); }
Run RunFileReader::load(TimeRange window) { return reader_->read(window); }
std::optional<TimeRange> RunFileReader::extent() { return reader_->extent(); }
bool RunFileReader::has_time_index() const { return reader_->has_time_index(); }
uint64_t RunFileReader::file_bytes() const { return reader_->file_bytes(); }
RunFileReader::RowCounts RunFileReader::row_counts(const std::optional<TimeRange>& window) {
  return reader_->row_counts(window);
}

uint64_t RunFileReader::RowCounts::bytes_in_memory() const {
  return samples * sizeof(Sample) + spans * sizeof(Span) + flows * sizeof(Flow) +
         counter_values * sizeof(CounterValue);
}

Run load_run(const std::string& path) { return RunFileReader(path).load(); }

}  // namespace stepscope
