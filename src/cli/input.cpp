#include "cli/input.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

#include <fmt/format.h>

#include "analyses/report.hpp"
#include "analyses/window.hpp"
#include "collectors/sysmon/memory_headroom.hpp"
#include "importers/chrome_trace.hpp"
#include "run/run_file.hpp"
#include "run/trimmed_run.hpp"
#include "util/byte_size.hpp"
#include "util/error.hpp"

namespace stepscope::cli {

namespace {
bool looks_like_trace_or_run(const std::filesystem::path& path) {
  std::string name = path.filename().string();
  return name.ends_with(".json") || name.ends_with(".json.gz") || name.ends_with(".db");
}

bool starts_with_sqlite_header(const std::string& path) {
  constexpr char kHeader[] = "SQLite format 3";  // the first 16 bytes, with its NUL
  char head[sizeof kHeader] = {};
  std::ifstream in(path, std::ios::binary);
  return in.read(head, sizeof head) && std::memcmp(head, kHeader, sizeof kHeader) == 0;
}

// A trimmed run's seconds count from its oldest kept data, not from the
// recording's start: a window that misses it says why.
std::string trimming_note(const Run& run) {
  std::optional<Trimming> trimming = run_trimming(run);
  if (!trimming) return "";
  if (!trimming->seconds_dropped) return "; the run was trimmed (record --max-size), its oldest data dropped";
  return fmt::format("; the run was trimmed (record --max-size): it starts {:.1f} s into the recording, whose "
                     "data before that was dropped", *trimming->seconds_dropped);
}

void apply_window_of(Run& run, const std::string& path, const std::string& window) {
  try {
    apply_window(run, window);
  } catch (const InputError& error) {
    throw InputError(path + ": " + error.what() + trimming_note(run));
  }
}

// "40 s", "25 min", "3.5 h".
std::string describe_seconds(double seconds) {
  if (seconds < 120) return fmt::format("{:.0f} s", seconds);
  if (seconds < 7200) return fmt::format("{:.0f} min", seconds / 60);
  return fmt::format("{:.1f} h", seconds / 3600);
}

// What a command takes in memory beside a run's rows: SQLite's page cache,
// the report being written, the program itself.
constexpr uint64_t kBytesBesideRows = 16 << 20;

// The memory a command takes for a run's rows: the rows themselves, and
// about a quarter more for the analyses' indexes (1.25x on the report of an
// hour of eight ranks: bench/README.md, "A day of eight ranks, and a day
// refused").
uint64_t memory_needed(const RunFileReader::RowCounts& rows) {
  return rows.bytes_in_memory() / 4 * 5 + kBytesBesideRows;
}

// What reading a run file takes at most, from its size alone: the rows the
// reader reserves for, and the analyses' quarter on top. Most runs need no
// more weighing than this.
uint64_t memory_bound(uint64_t file_bytes) {
  return file_bytes * RunFileReader::kMostRowBytesPerFileByte / 4 * 5 + kBytesBesideRows;
}

// Runs whose size bounds what they take under this are not weighed: reading
// the bounds (the cgroup's files among them) costs as much as reading such a
// run, and a job's report reads dozens. Out of memory is still an error.
constexpr uint64_t kLeastWeighed = 256 << 20;

// The last part of a run that fits in `headroom` with a fifth to spare, in
// whole minutes; none when not even a minute does.
std::optional<int64_t> seconds_that_fit(const RunFileReader::RowCounts& rows, const std::optional<TimeRange>& extent,
                                        uint64_t headroom) {
  if (!extent || extent->to_ns <= extent->from_ns || headroom <= kBytesBesideRows) return std::nullopt;
  double share = 0.8 * static_cast<double>(headroom - kBytesBesideRows) /
                 static_cast<double>(memory_needed(rows) - kBytesBesideRows);
  auto seconds = static_cast<int64_t>(share * static_cast<double>(extent->to_ns - extent->from_ns) / 1e9);
  if (seconds < 60) return std::nullopt;
  return seconds / 60 * 60;
}

// A run (or its window) is read into memory whole: refused before reading
// when it would take more than this process can still have, rather than
// ended by std::bad_alloc, or by the OOM killer (which may pick the training
// job instead) minutes in.
void check_fits_in_memory(RunFileReader& file, const std::string& path, const std::optional<TimeRange>& window) {
  if (memory_bound(file.file_bytes()) < kLeastWeighed) return;
  std::optional<MemoryHeadroom> headroom = least_headroom(read_memory_bounds());
  if (!headroom || memory_bound(file.file_bytes()) <= headroom->bytes) return;
  RunFileReader::RowCounts rows = file.row_counts(window);
  if (memory_needed(rows) <= headroom->bytes) return;
  std::string what = fmt::format(
      "{}: {} takes about {} of memory ({} samples, {} spans, {} counter values, and the analyses' indexes), "
      "and {} leaves {}",
      path, window ? "this window of it" : "reading it whole", describe_byte_size(memory_needed(rows)), rows.samples,
      rows.spans, rows.counter_values, headroom->bound, describe_byte_size(headroom->bytes));
  // Without an index on time the extent would take reading the run whole.
  std::optional<TimeRange> extent = file.has_time_index() ? file.extent() : std::nullopt;
  if (std::optional<int64_t> seconds = seconds_that_fit(rows, extent, headroom->bytes)) {
    throw InputError(fmt::format("{}; read a part of it: of its {} recorded, --window -{}: (its last {}) fits", what,
                                 describe_seconds(static_cast<double>(extent->to_ns - extent->from_ns) / 1e9),
                                 *seconds, describe_seconds(static_cast<double>(*seconds))));
  }
  throw InputError(what + "; read a shorter part of it with --window, or free memory");
}

// The part of a run file a --window reads: that of a window of seconds; the
// whole run (nullopt) for none, for a window of steps or one to be refused
// (whose message names the run's steps), and for a file without a time index.
std::optional<TimeRange> part_read(RunFileReader& file, const std::string& window) {
  if (window.empty()) return std::nullopt;
  std::optional<TimeRange> extent = file.extent();
  return extent ? resolve_seconds_window(*extent, window) : std::nullopt;
}

Run load_run_file(const std::string& path, const std::string& window) {
  RunFileReader file(path);
  std::optional<TimeRange> part = part_read(file, window);
  check_fits_in_memory(file, path, part);
  if (part) {
    Run run = file.load(*part);
    note_window(run, window, *part);
    return run;
  }
  Run run = file.load();
  if (!window.empty()) apply_window_of(run, path, window);
  return run;
}

// Roughly what reading `path` takes: a run file's rows as check_fits_in_memory
// weighs them (`exact`), or its size's bound; a trace's size (its import holds
// about 0.4 bytes per byte of JSON; gzip packs JSON about ten to one).
// Nothing for what cannot be read: its reading will say what is wrong.
uint64_t memory_to_read(const std::string& path, const std::string& window, bool exact) {
  try {
    uint64_t bytes = std::filesystem::file_size(path);
    if (!starts_with_sqlite_header(path)) return path.ends_with(".gz") ? bytes * 4 : bytes / 2;
    if (!exact) return memory_bound(bytes);
    RunFileReader file(path);
    return memory_needed(file.row_counts(part_read(file, window)));
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace

Run open_run_or_trace(const std::string& path, const ChromeTraceOptions& trace_options, const std::string& window) {
  // A run file is recognised by content, not name; anything else is taken to
  // be a trace, and the importer says precisely what is wrong if it is not.
  if (starts_with_sqlite_header(path)) return load_run_file(path, window);
  Run run = import_chrome_trace(path, trace_options);
  if (!window.empty()) apply_window_of(run, path, window);
  return run;
}

size_t runs_at_once(const std::string& first, const std::vector<std::string>& others, const std::string& window,
                    size_t most) {
  std::optional<MemoryHeadroom> headroom = least_headroom(read_memory_bounds());
  if (!headroom) return most;
  // By the files' sizes first, which most jobs fit without opening a file.
  size_t fitting = 0;
  for (bool exact : {false, true}) {
    std::vector<uint64_t> needs;
    for (const std::string& path : others) needs.push_back(memory_to_read(path, window, exact));
    fitting = ranks_that_fit(headroom->bytes, memory_to_read(first, window, exact), needs, most);
    if (fitting >= most) break;
  }
  return fitting;
}

void add_window_option(CLI::App* command, std::string& window) {
  command->add_option("--window", window,
                      "only this part of the run: FROM:TO in seconds since its start (negative: from its end; "
                      "-600: is the last ten minutes), or steps:FIRST:LAST");
}

std::vector<std::string> expand_inputs(const std::vector<std::string>& inputs) {
  std::vector<std::string> paths;
  for (const std::string& input : inputs) {
    std::error_code error;
    if (!std::filesystem::is_directory(input, error)) {
      paths.push_back(input);
      continue;
    }
    std::vector<std::string> found;
    for (const auto& entry : std::filesystem::directory_iterator(input, error)) {
      if (entry.is_regular_file() && looks_like_trace_or_run(entry.path())) found.push_back(entry.path().string());
    }
    if (error) throw InputError(input + ": cannot list the directory: " + error.message());
    if (found.empty()) throw InputError(input + ": no traces (.json, .json.gz) or runs (.db) in the directory");
    std::sort(found.begin(), found.end());
    paths.insert(paths.end(), found.begin(), found.end());
  }
  return paths;
}

}  // namespace stepscope::cli
