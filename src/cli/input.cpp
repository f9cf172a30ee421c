#include "cli/input.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

#include <fmt/format.h>

#include "analyses/window.hpp"
#include "importers/chrome_trace.hpp"
#include "run/run_file.hpp"
#include "run/trimmed_run.hpp"
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

// A window of seconds reads only that part of a run file; a window of steps
// (or one to be refused, with the run's steps in the message) the whole.
Run load_run_file(const std::string& path, const std::string& window) {
  RunFileReader file(path);
  if (window.empty()) return file.load();
  if (std::optional<TimeRange> extent = file.extent()) {
    if (std::optional<TimeRange> range = resolve_seconds_window(*extent, window)) {
      Run run = file.load(*range);
      note_window(run, window, *range);
      return run;
    }
  }
  Run run = file.load();
  apply_window_of(run, path, window);
  return run;
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
