// Helpers shared by the importer's unit tests.
#pragma once

#include <string>
#include <string_view>

#include "importers/chrome_trace.hpp"
#include "util/error.hpp"

namespace stepscope::test {

// The InputError message of importing `json`, or "" when it imports.
inline std::string import_error(std::string_view json, const ChromeTraceOptions& options = {}) {
  try {
    import_chrome_trace_bytes(json, "trace.json", options);
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

inline std::string warnings_of(const Run& run) {
  auto found = run.metadata.find("import_warnings");
  return found == run.metadata.end() ? "" : found->second;
}

}  // namespace stepscope::test
