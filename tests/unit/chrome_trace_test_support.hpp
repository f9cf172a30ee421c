// Helpers shared by the importer's unit tests.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "importers/chrome_trace.hpp"
#include "util/error.hpp"
#include "util/gzip_encoder.hpp"

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

// `text` compressed as one gzip member.
inline std::string gzip(std::string_view text) { return gzip_compress(text); }

}  // namespace stepscope::test
