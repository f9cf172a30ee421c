#include "cli/input.hpp"

#include <cstring>
#include <fstream>

#include "analyses/window.hpp"
#include "importers/chrome_trace.hpp"
#include "run/run_file.hpp"
#include "util/error.hpp"

namespace stepscope::cli {

namespace {
bool starts_with_sqlite_header(const std::string& path) {
  constexpr char kHeader[] = "SQLite format 3";  // the first 16 bytes, with its NUL
  char head[sizeof kHeader] = {};
  std::ifstream in(path, std::ios::binary);
  return in.read(head, sizeof head) && std::memcmp(head, kHeader, sizeof kHeader) == 0;
}

void apply_window_of(Run& run, const std::string& path, const std::string& window) {
  try {
    apply_window(run, window);
  } catch (const InputError& error) {
    throw InputError(path + ": " + error.what());
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

}  // namespace stepscope::cli
