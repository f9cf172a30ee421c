#include "cli/input.hpp"

#include <cstring>
#include <fstream>

#include "importers/chrome_trace.hpp"
#include "run/run_file.hpp"

namespace stepscope::cli {

namespace {
bool starts_with_sqlite_header(const std::string& path) {
  constexpr char kHeader[] = "SQLite format 3";  // the first 16 bytes, with its NUL
  char head[sizeof kHeader] = {};
  std::ifstream in(path, std::ios::binary);
  return in.read(head, sizeof head) && std::memcmp(head, kHeader, sizeof kHeader) == 0;
}
}  // namespace

Run open_run_or_trace(const std::string& path, const ChromeTraceOptions& trace_options) {
  // A run file is recognised by content, not name; anything else is taken to
  // be a trace, and the importer says precisely what is wrong if it is not.
  if (starts_with_sqlite_header(path)) return load_run(path);
  return import_chrome_trace(path, trace_options);
}

}  // namespace stepscope::cli
