// The header fields of a Chrome trace object (everything beside
// "traceEvents": schemaVersion, deviceProperties, distributedInfo, ...),
// which become Run metadata.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <simdjson.h>

namespace stepscope {

class TraceHeaderReader {
 public:
  explicit TraceHeaderReader(std::string source_name) : source_(std::move(source_name)) {}

  // The metadata value of header field `key` whose JSON value is `text`
  // (starting at byte `offset`): scalars as text (strings decoded), the two
  // structured fields analyses use ("deviceProperties", "distributedInfo")
  // as JSON text, nothing for other structures (INFO/ERROR logs). The value
  // is validated fully; invalid JSON throws InputError naming the field.
  std::optional<std::string> read(std::string_view key, std::string_view text, uint64_t offset);

 private:
  std::string source_;
  simdjson::dom::parser parser_;
};

}  // namespace stepscope
