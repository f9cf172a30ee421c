// Loading a run file. The file may come from anywhere (another version of
// stepscope, a hand-edited copy, a truncated download), so every id is
// checked before the Run is handed to analyses that index with it.
#include <filesystem>

#include <fmt/format.h>

#include "run/run_file.hpp"
#include "run/run_schema.hpp"
#include "run/sqlite_db.hpp"
#include "util/error.hpp"

namespace stepscope {

namespace {

class RunReader {
 public:
  explicit RunReader(const std::string& path) : db_(open(path)) {}

  Run read() {
    check_identity();
    Run run;
    read_strings(run);
    read_metadata(run);
    read_processes_and_threads(run);
    read_frames_and_stacks(run);
    read_samples(run);
    read_spans_and_flows(run);
    read_counters(run);
    return run;
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

  void read_samples(Run& run) {
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

  void read_spans_and_flows(Run& run) {
    // Version 1 had no correlation, bytes or detail columns.
    const char* select_spans = schema_version_ >= 2
        ? "SELECT id, start_ns, end_ns, pid, tid, kind, name, correlation, bytes, detail FROM spans ORDER BY id"
        : "SELECT id, start_ns, end_ns, pid, tid, kind, name, 0, 0, 0 FROM spans ORDER BY id";
    for_each_row("spans", select_spans, 0, [&](SqliteStatement& s, int64_t id) {
      int64_t kind = s.column_int(5);
      if (kind < 0 || kind >= kSpanKindCount) bad_row("spans", id, fmt::format("unknown span kind {}", kind));
      run.spans.push_back({s.column_int(1), s.column_int(2), s.column_int(3), s.column_int(4),
                           static_cast<SpanKind>(kind), string_ref(run, "spans", id, s.column_int(6)),
                           s.column_int(7), s.column_int(8), string_ref(run, "spans", id, s.column_int(9))});
    });
    auto span_ref = [&](int64_t row, int64_t span) {
      if (span < 0 || static_cast<size_t>(span) >= run.spans.size()) {
        bad_row("flows", row, fmt::format("span {} does not exist", span));
      }
      return static_cast<SpanId>(span);
    };
    for_each_row("flows", "SELECT id, from_span, to_span, kind FROM flows ORDER BY id", 0,
                 [&](SqliteStatement& s, int64_t id) {
                   run.flows.push_back({span_ref(id, s.column_int(1)), span_ref(id, s.column_int(2)),
                                        string_ref(run, "flows", id, s.column_int(3))});
                 });
  }

  void read_counters(Run& run) {
    for_each_row("counter_tracks", "SELECT id, name, pid, unit FROM counter_tracks ORDER BY id", 0,
                 [&](SqliteStatement& s, int64_t id) {
                   run.counter_tracks.push_back({string_ref(run, "counter_tracks", id, s.column_int(1)),
                                                 s.column_int(2),
                                                 string_ref(run, "counter_tracks", id, s.column_int(3))});
                 });
    for_each_row("counter_values", "SELECT id, track, ts_ns, value FROM counter_values ORDER BY id", 0,
                 [&](SqliteStatement& s, int64_t id) {
                   int64_t track = s.column_int(1);
                   if (track < 0 || static_cast<size_t>(track) >= run.counter_tracks.size()) {
                     bad_row("counter_values", id, fmt::format("counter track {} does not exist", track));
                   }
                   run.counter_values.push_back({static_cast<CounterTrackId>(track), s.column_int(2),
                                                 s.column_double(3)});
                 });
  }

  SqliteDb db_;
  int schema_version_ = kRunSchemaVersion;
};

}  // namespace

Run load_run(const std::string& path) { return RunReader(path).read(); }

}  // namespace stepscope
