// Loading a run file, whole or a window of it. The file may come from
// anywhere (another version of stepscope, a hand-edited copy, a truncated
// download), so every id is checked before the Run is handed to analyses
// that index with it.
#include <algorithm>
#include <filesystem>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "run/run_file.hpp"
#include "run/run_schema.hpp"
#include "run/sample_block.hpp"
#include "run/sqlite_db.hpp"
#include "util/demangle.hpp"
#include "util/error.hpp"

namespace stepscope {

namespace {

// A block claiming more is corrupt (the writer makes blocks of 4096): the
// bound keeps a bad count from asking for gigabytes.
constexpr int64_t kMostSamplesInABlock = int64_t{1} << 20;

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

}  // namespace

class RunFileReader::Reader {
 public:
  explicit Reader(const std::string& path) : db_(open(path)) { check_identity(); }

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
    read_samples(run, window);
    read_spans_and_flows(run, window);
    read_counters(run, window);
    return run;
  }

  std::optional<TimeRange> extent() {
    if (schema_version_ < 3) {  // no index: the run is read whole, once, for this and the next read
      whole_ = read(std::nullopt);
      return run_extent(*whole_);
    }
    // An entry per block and a row per commit: small scans.
    SqliteStatement ends(db_,
                         "SELECT min(first), max(last) FROM ("
                         " SELECT min(start_ns) AS first, max(end_ns) AS last FROM sample_blocks UNION ALL"
                         " SELECT min(low), max(latest_ns) FROM row_ranges WHERE rows IN ('spans', 'counter_values'))");
    if (!ends.step() || ends.column_is_null(0)) return std::nullopt;
    TimeRange extent{ends.column_int(0), ends.column_int(1)};
    Run metadata_only;
    read_metadata(metadata_only);
    if (auto start = metadata_only.metadata_int("start_clock_ns"); start && *start < extent.from_ns) {
      extent.from_ns = *start;
    }
    return extent;
  }

 private:
  static SqliteDb open(const std::string& path) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) {
      throw InputError(fmt::format("cannot open run {}: no such file", path));
    }
    return SqliteDb(path, SqliteDb::Mode::kReadExisting);
  }

  [[noreturn]] void bad_row(const char* table, int64_t id, const std::string& what) const {
    throw InputError(fmt::format("{}: table {} row {}: {}", db_.path(), table, id, what));
  }

  // Runs `sql` (which selects id first) and calls on_row for each row after
  // checking ids are 0, 1, 2, ... as the writer numbers them.
  template <typename OnRow>
  void for_each_row(const char* table, const char* sql, int64_t first_id, OnRow on_row) {
    SqliteStatement select(db_, sql);
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
  template <typename OnRow>
  void for_each_row(const char* table, const char* columns, const std::optional<WindowSelect>& window,
                    int64_t first_id, OnRow on_row) {
    if (!window) {
      std::string sql = fmt::format("SELECT {} FROM {} ORDER BY id", columns, table);
      return for_each_row(table, sql.c_str(), first_id, on_row);
    }
    std::string sql = fmt::format("SELECT {} FROM {} WHERE id BETWEEN ?1 AND ?2 ORDER BY id", columns, table);
    SqliteStatement select(db_, sql.c_str());
    for (const RowRange& range : row_ranges(table, window->low, window->high)) {
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
  // must cover the table, each row once, or a window could miss rows.
  std::vector<RowRange> row_ranges(const char* table, int64_t low, int64_t high) {
    SqliteStatement select(db_,
                           "SELECT id, first_id, count, low, high FROM row_ranges WHERE rows = ? ORDER BY first_id");
    select.bind_text(1, table);
    std::vector<RowRange> overlapping;
    int64_t next = 0;
    while (select.step()) {
      int64_t first = select.column_int(1), count = select.column_int(2);
      if (first != next || count < 1) {
        bad_row("row_ranges", select.column_int(0), fmt::format("{} rows {} to {} after row {}", table, first,
                                                                 first + count - 1, next - 1));
      }
      next = first + count;
      RowRange range{first, next - 1, select.column_int(3), select.column_int(4)};
      if (range.high >= low && range.low <= high) overlapping.push_back(range);
    }
    std::string rows_sql = fmt::format("SELECT coalesce(max(id) + 1, 0) FROM {}", table);
    SqliteStatement rows(db_, rows_sql.c_str());
    if (rows.step() && rows.column_int(0) != next) {
      throw InputError(fmt::format("{}: table row_ranges covers {} rows of {}, which has {}", db_.path(), next,
                                   table, rows.column_int(0)));
    }
    return overlapping;
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

  StringId string_ref(const Run& run, const char* table, int64_t row, int64_t id) const {
    if (id < 0 || static_cast<size_t>(id) >= run.strings.size()) {
      bad_row(table, row, fmt::format("string {} does not exist", id));
    }
    return static_cast<StringId>(id);
  }

  void read_strings(Run& run) {
    for_each_row("strings", "SELECT id, value FROM strings ORDER BY id", 0,
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
    for_each_row("processes", "SELECT id, pid, parent_pid, command, start_ns, end_ns, exit_status FROM processes ORDER BY id", 0,
                 [&](SqliteStatement& s, int64_t id) {
                   run.processes.push_back({s.column_int(1), s.column_int(2),
                                            string_ref(run, "processes", id, s.column_int(3)),
                                            s.column_int(4), s.column_int(5),
                                            static_cast<int32_t>(s.column_int(6))});
                 });
    for_each_row("threads", "SELECT id, pid, tid, name FROM threads ORDER BY id", 0,
                 [&](SqliteStatement& s, int64_t id) {
                   run.threads.push_back({s.column_int(1), s.column_int(2),
                                          string_ref(run, "threads", id, s.column_int(3))});
                 });
  }

  void read_frames_and_stacks(Run& run) {
    for_each_row("frames", "SELECT id, function, file, line, kind FROM frames ORDER BY id", 0,
                 [&](SqliteStatement& s, int64_t id) {
                   int64_t kind = s.column_int(4);
                   if (kind < 0 || kind > static_cast<int64_t>(FrameKind::kMarker)) {
                     bad_row("frames", id, fmt::format("unknown frame kind {}", kind));
                   }
                   Frame frame{string_ref(run, "frames", id, s.column_int(1)),
                               string_ref(run, "frames", id, s.column_int(2)),
                               static_cast<int32_t>(s.column_int(3)),
                               static_cast<FrameKind>(kind)};
                   if (run.frames.intern(frame) != id) bad_row("frames", id, "duplicate frame");
                 });
    for_each_row("stacks", "SELECT id, parent, frame FROM stacks ORDER BY id", 1,
                 [&](SqliteStatement& s, int64_t id) {
                   int64_t parent = s.column_int(1), frame = s.column_int(2);
                   if (parent < 0 || parent >= id) bad_row("stacks", id, fmt::format("parent {} does not precede it", parent));
                   if (frame < 0 || static_cast<size_t>(frame) >= run.frames.size()) {
                     bad_row("stacks", id, fmt::format("frame {} does not exist", frame));
                   }
                   run.stacks.append_loaded({static_cast<StackId>(parent), static_cast<FrameId>(frame)});
                 });
  }

  void read_samples(Run& run, const std::optional<TimeRange>& window) {
    if (schema_version_ < 3) return read_sample_rows(run);
    constexpr const char* kColumns = "SELECT id, first_sample, count, start_ns, end_ns, data FROM sample_blocks";
    int64_t next_sample = 0;
    std::vector<Sample> decoded;
    auto read_block = [&](SqliteStatement& s, int64_t id) {
      int64_t first = s.column_int(1), count = s.column_int(2);
      if (window ? first < next_sample : first != next_sample) {
        bad_row("sample_blocks", id, fmt::format("expected first sample {}", next_sample));
      }
      if (count < 1 || count > kMostSamplesInABlock) {
        bad_row("sample_blocks", id, fmt::format("a count of {} samples", count));
      }
      next_sample = first + count;
      decoded.clear();
      std::string error = decode_sample_block(s.column_blob(5), static_cast<size_t>(count), decoded);
      if (!error.empty()) bad_row("sample_blocks", id, error);
      check_block(run, id, decoded, {s.column_int(3), s.column_int(4)});
      for (const Sample& sample : decoded) {
        if (!window || (sample.ts_ns >= window->from_ns && sample.ts_ns < window->to_ns)) run.samples.push_back(sample);
      }
    };
    if (!window) return for_each_row("sample_blocks", fmt::format("{} ORDER BY id", kColumns).c_str(), 0, read_block);
    // The blocks' ids from their index on time alone (a scan of the table
    // would read every block), then each block.
    SqliteStatement ids(db_, "SELECT id FROM sample_blocks WHERE end_ns >= ? AND start_ns < ?");
    ids.bind(1, window->from_ns).bind(2, window->to_ns);
    std::vector<int64_t> overlapping;
    while (ids.step()) overlapping.push_back(ids.column_int(0));
    std::sort(overlapping.begin(), overlapping.end());
    SqliteStatement block(db_, fmt::format("{} WHERE id = ?", kColumns).c_str());
    for (int64_t id : overlapping) {
      block.reset();
      if (block.bind(1, id).step()) read_block(block, id);
    }
  }

  // A block's samples lie within its start and end (or a window would miss
  // them) and are on stacks that exist.
  void check_block(const Run& run, int64_t id, const std::vector<Sample>& samples, TimeRange span) const {
    for (const Sample& sample : samples) {
      if (sample.ts_ns < span.from_ns || sample.ts_ns > span.to_ns) {
        bad_row("sample_blocks", id, fmt::format("a sample at {} ns outside the block's {} to {} ns", sample.ts_ns,
                                                 span.from_ns, span.to_ns));
      }
      if (sample.stack >= run.stacks.size()) {
        bad_row("sample_blocks", id, fmt::format("stack {} does not exist", sample.stack));
      }
    }
  }

  // Schema 1 and 2: a row per sample.
  void read_sample_rows(Run& run) {
    for_each_row("samples", "SELECT id, ts_ns, pid, tid, stack, state, gil FROM samples ORDER BY id", 0,
                 [&](SqliteStatement& s, int64_t id) {
                   int64_t stack = s.column_int(4), state = s.column_int(5);
                   if (stack < 0 || static_cast<size_t>(stack) >= run.stacks.size()) {
                     bad_row("samples", id, fmt::format("stack {} does not exist", stack));
                   }
                   if (state < 0 || state > static_cast<int64_t>(ThreadState::kDiskWait)) {
                     bad_row("samples", id, fmt::format("unknown thread state {}", state));
                   }
                   run.samples.push_back({s.column_int(1), s.column_int(2), s.column_int(3),
                                          static_cast<StackId>(stack), static_cast<ThreadState>(state),
                                          s.column_int(6) != 0});
                 });
  }

  void read_spans_and_flows(Run& run, const std::optional<TimeRange>& window) {
    // Version 1 had no correlation, bytes or detail columns.
    const char* columns = schema_version_ >= 2
                              ? "id, start_ns, end_ns, pid, tid, kind, name, correlation, bytes, detail"
                              : "id, start_ns, end_ns, pid, tid, kind, name, 0, 0, 0";
    std::optional<WindowSelect> spans;
    if (window) spans = WindowSelect{"start_ns", 1, window->from_ns, window->to_ns - 1};
    std::vector<int64_t> span_ids;  // the file's id of each span read, ascending
    // Kernels of runs recorded before the GPU collector demangled their names: demangled here,
    // once per name, as a recording now names them.
    std::unordered_map<StringId, StringId> kernel_names;
    auto kernel_name = [&](StringId mangled) {
      auto [known, added] = kernel_names.try_emplace(mangled, mangled);
      if (added) known->second = run.strings.intern(demangled(run.strings.get(mangled)));
      return known->second;
    };
    for_each_row("spans", columns, spans, 0, [&](SqliteStatement& s, int64_t id) {
      int64_t kind = s.column_int(5);
      if (kind < 0 || kind >= kSpanKindCount) bad_row("spans", id, fmt::format("unknown span kind {}", kind));
      StringId name = string_ref(run, "spans", id, s.column_int(6));
      if (kind == static_cast<int64_t>(SpanKind::kKernel)) name = kernel_name(name);
      run.spans.push_back({s.column_int(1), s.column_int(2), s.column_int(3), s.column_int(4),
                           static_cast<SpanKind>(kind), name, s.column_int(7), s.column_int(8),
                           string_ref(run, "spans", id, s.column_int(9))});
      span_ids.push_back(id);
    });
    // A window keeps the flows between the spans it keeps.
    auto span_ref = [&](int64_t row, int64_t span) -> std::optional<SpanId> {
      auto found = std::lower_bound(span_ids.begin(), span_ids.end(), span);
      if (found != span_ids.end() && *found == span) return static_cast<SpanId>(found - span_ids.begin());
      if (!window) bad_row("flows", row, fmt::format("span {} does not exist", span));
      return std::nullopt;
    };
    if (window && span_ids.empty()) return;
    std::optional<WindowSelect> flows;
    if (window) flows = WindowSelect{"from_span", 1, span_ids.front(), span_ids.back()};
    for_each_row("flows", "id, from_span, to_span, kind", flows, 0, [&](SqliteStatement& s, int64_t id) {
      auto from = span_ref(id, s.column_int(1)), to = span_ref(id, s.column_int(2));
      if (from && to) run.flows.push_back({*from, *to, string_ref(run, "flows", id, s.column_int(3))});
    });
  }

  void read_counters(Run& run, const std::optional<TimeRange>& window) {
    for_each_row("counter_tracks", "SELECT id, name, pid, unit FROM counter_tracks ORDER BY id", 0,
                 [&](SqliteStatement& s, int64_t id) {
                   run.counter_tracks.push_back({string_ref(run, "counter_tracks", id, s.column_int(1)),
                                                 s.column_int(2),
                                                 string_ref(run, "counter_tracks", id, s.column_int(3))});
                 });
    // A window keeps the values at its end too (run_window.hpp).
    std::optional<WindowSelect> values;
    if (window) values = WindowSelect{"ts_ns", 2, window->from_ns, window->to_ns};
    for_each_row("counter_values", "id, track, ts_ns, value", values, 0, [&](SqliteStatement& s, int64_t id) {
      int64_t track = s.column_int(1);
      if (track < 0 || static_cast<size_t>(track) >= run.counter_tracks.size()) {
        bad_row("counter_values", id, fmt::format("counter track {} does not exist", track));
      }
      run.counter_values.push_back({static_cast<CounterTrackId>(track), s.column_int(2), s.column_double(3)});
    });
  }

  SqliteDb db_;
  int schema_version_ = kRunSchemaVersion;
  std::optional<Run> whole_;  // a file without indexes, read whole by extent()
};

RunFileReader::RunFileReader(const std::string& path) : reader_(std::make_unique<Reader>(path)) {}
RunFileReader::~RunFileReader() = default;
Run RunFileReader::load() { return reader_->read(std::nullopt); }
Run RunFileReader::load(TimeRange window) { return reader_->read(window); }
std::optional<TimeRange> RunFileReader::extent() { return reader_->extent(); }

Run load_run(const std::string& path) { return RunFileReader(path).load(); }

}  // namespace stepscope
