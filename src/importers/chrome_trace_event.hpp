// Reading the fields of one Chrome trace event (one element of
// "traceEvents", as raw JSON text): first by PlainEventReader, a hand-written
// reader of the plain form profilers write; what it declines, with simdjson
// On-Demand: only the fields the importer uses are parsed, the rest skipped.
// Text simdjson refuses for invalid UTF-8 or raw control characters in
// strings is repaired and read again (counted, for the import's warnings).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <simdjson.h>

#include "importers/plain_event_reader.hpp"
#include "importers/trace_event_fields.hpp"
#include "importers/trace_event_scanner.hpp"

namespace stepscope {

// Throws InputError "SOURCE: event #INDEX: WHAT".
[[noreturn]] void throw_event_error(const std::string& source, size_t index, std::string_view what);

// Problems tolerated while reading events, counted for the warnings.
struct EventReadCounts {
  size_t non_numeric_counter_args = 0;
  size_t bad_span_args = 0;           // correlation/bytes not non-negative integers
  size_t replaced_surrogates = 0;     // strings with lone surrogate escapes
  size_t invalid_utf8_bytes = 0;      // replaced by U+FFFD
  size_t control_characters = 0;      // raw, inside strings
};

class ChromeTraceEventReader : public EventPreReader {
 public:
  // Without `plain_reader`, every event goes through simdjson (tests
  // compare the two ways).
  explicit ChromeTraceEventReader(std::string source_name, bool plain_reader = true)
      : source_(std::move(source_name)), plain_reader_(plain_reader) {}

  // Reads the event `text` (at least `padded_size` bytes allocated from its
  // start), which starts at byte `offset` of the input and is event `index`.
  // Throws InputError naming the event index (and the byte offset for JSON
  // syntax errors).
  void read(std::string_view text, size_t padded_size, uint64_t offset, size_t index);

  // As the scanner's pre-reader: reads a plain event straight from the
  // scanner's buffer (fields() and args() then hold it), or returns 0.
  size_t pre_read(const char* data, size_t available) override;

  const EventFields& fields() const { return fields_; }
  const EventArgs& args() const { return args_; }
  const EventReadCounts& counts() const { return counts_; }

 private:
  size_t read_plain(const char* data, size_t available);
  void parse(std::string_view text);
  simdjson::error_code iterate_zero_padded(std::string& text);
  void read_fields(simdjson::ondemand::object& object);
  void read_field(std::string_view key, simdjson::ondemand::value value);
  std::string_view read_string(simdjson::ondemand::value& value, std::string_view key);
  int64_t read_microseconds(simdjson::ondemand::value& value, std::string_view key);
  TrackIdField read_track_id(simdjson::ondemand::value& value, std::string_view key);
  std::string_view read_scalar_text(simdjson::ondemand::value& value, std::string_view key);
  void read_args_field(simdjson::ondemand::value& value);
  void read_args_text();
  void read_args(simdjson::ondemand::object& args);
  void read_span_arg(std::string_view key, simdjson::ondemand::value& value, simdjson::ondemand::json_type type);
  void read_counter_arg(std::string_view key, simdjson::ondemand::value& value, simdjson::ondemand::json_type type);

  [[noreturn]] void fail_event(std::string_view what) const;
  [[noreturn]] void fail_json(simdjson::error_code error);

  std::string source_;
  bool plain_reader_;
  PlainEventReader plain_;
  simdjson::ondemand::parser parser_;
  simdjson::ondemand::parser args_parser_;
  simdjson::ondemand::document document_;
  EventFields fields_;
  EventArgs args_;
  EventReadCounts counts_;

  // The event being read: where its text lies and ends (allocated bytes).
  const char* text_begin_ = nullptr;
  const char* allocated_end_ = nullptr;
  uint64_t offset_ = 0;
  size_t index_ = 0;
  bool document_ready_ = false;   // document_ may say where it stopped
  bool args_read_ = false;         // args already consumed in place
  std::string_view args_json_;     // args seen before "ph", kept as text
  std::string key_scratch_;        // a key with escapes, decoded
  std::string copy_;               // the event's text, padded for simdjson
  std::string repaired_;           // the event's text after repair_json_text
  std::deque<std::string> decoded_strings_;  // strings decoded here, per event
};

}  // namespace stepscope
