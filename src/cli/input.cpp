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
}  // namespace

Run open_run_or_trace(const std::string& path, const ChromeTraceOptions& trace_options, const std::string& window) {
  // A run file is recognised by content, not name; anything else is taken to
  // be a trace, and the importer says precisely what is wrong if it is not.
  Run run = starts_with_sqlite_header(path) ? load_run(path) : import_chrome_trace(path, trace_options);
  if (window.empty()) return run;
  try {
    apply_window(run, window);
  } catch (const InputError& error) {
    throw InputError(path + ": " + error.what());
  }
  return run;
}

void add_window_option(CLI::App* command, std::string& window) {
  command->add_option("--window", window,
                      "only this part of the run: FROM:TO in seconds since its start (negative: from its end; "
                      "-600: is the last ten minutes), or steps:FIRST:LAST");
}

}  // namespace stepscope::cli
