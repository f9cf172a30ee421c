// Helpers shared by the importer's unit tests.
#pragma once

#include <gtest/gtest.h>
#include <zlib.h>

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

// `text` compressed as one gzip member.
inline std::string gzip(std::string_view text) {
  z_stream stream{};
  EXPECT_EQ(deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&stream, static_cast<uLong>(text.size())) + 32, '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  stream.avail_in = static_cast<uInt>(text.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&stream, Z_FINISH), Z_STREAM_END);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

}  // namespace stepscope::test
