#include "importers/chrome_trace_event.hpp"

#include <fmt/format.h>

#include "importers/json_text.hpp"
#include "util/error.hpp"

namespace stepscope {

namespace od = simdjson::ondemand;

static_assert(PlainEventReader::kReadAhead <= EventPreReader::kReadAhead);

namespace {

bool needs_args(std::string_view ph) { return ph == "M" || ph == "C" || ph == "X"; }

// Errors a repair of the text can cure.
bool is_repairable(simdjson::error_code error) {
  return error == simdjson::UTF8_ERROR || error == simdjson::UNESCAPED_CHARS;
}

// A field's key as text, without copying: keys are read in place between
// their quotes (simdjson has checked the string's extent); the rare key with
// an escape is decoded into `scratch`.
bool key_text(od::field& field, std::string& scratch, std::string_view& key) {
  const char* begin = field.key().raw();
  const char* end = begin;
  while (*end != '"' && *end != '\\') ++end;
  if (*end == '"') {
    key = std::string_view(begin, static_cast<size_t>(end - begin));
    return true;
  }
  for (; *end != '"'; ++end) {
    if (*end == '\\') ++end;  // an escaped byte, whatever it is
  }
  scratch.clear();
  if (!decode_json_string(std::string_view(begin, static_cast<size_t>(end - begin)), scratch)) return false;
  key = scratch;
  return true;
}

}  // namespace

void throw_event_error(const std::string& source, size_t index, std::string_view what) {
  throw InputError(fmt::format("{}: event #{}: {}", source, index, what));
}

void ChromeTraceEventReader::read(std::string_view text, size_t padded_size, uint64_t offset, size_t index) {
  offset_ = offset;
  index_ = index;
  args_.clear();
  args_read_ = false;
  args_json_ = {};
  // Half the events of a large trace come this way since the consumer shares
  // the reading: clearing an empty deque and zeroing the fields that the
  // plain reader overwrites whole were 2.7 % of the reading's samples (perf).
  if (!decoded_strings_.empty()) decoded_strings_.clear();
  // An event the scanner's pre-read declined may have been cut by the end
  // of its buffer; whole now, it may be plain after all.
  if (padded_size >= text.size() + PlainEventReader::kReadAhead) {
    size_t bad_args_before = counts_.bad_span_args;
    if (read_plain(text.data(), text.size()) == text.size()) return;
    counts_.bad_span_args = bad_args_before;  // (cannot happen: a plain event ends where the scanner found)
    args_.clear();
  }
  fields_ = EventFields{};
  parse(text);
  od::object object;
  if (auto error = document_.get_object().get(object)) fail_json(error);
  read_fields(object);
  if (fields_.ph.empty()) fail_event("has no \"ph\" (phase)");
  if (!args_read_ && !args_json_.empty() && needs_args(fields_.ph)) read_args_text();
}

// Most events are plain; what PlainEventReader declines is read again from
// scratch by simdjson.
size_t ChromeTraceEventReader::read_plain(const char* data, size_t available) {
  if (!plain_reader_) return 0;
  PlainEventCounts counts;
  size_t length = plain_.read(data, available, fields_, args_, counts);
  if (length > 0) {
    counts_.bad_span_args += counts.bad_span_args;
    return length;
  }
  fields_ = EventFields{};
  args_.clear();
  return 0;
}

size_t ChromeTraceEventReader::pre_read(const char* data, size_t available) {
  args_.clear();  // fields_ are overwritten whole by the plain reader
  return read_plain(data, available);
}

// Starts iterating the event; falls back to a repaired copy when simdjson
// refuses the text for a reason that does not make the event unsound.
void ChromeTraceEventReader::parse(std::string_view text) {
  copy_.assign(text);
  auto error = iterate_zero_padded(copy_);
  if (!error) return;
  if (!is_repairable(error)) fail_json(error);
  TextRepairs repairs = repair_json_text(text, repaired_, simdjson::SIMDJSON_PADDING);
  counts_.invalid_utf8_bytes += repairs.invalid_utf8_bytes;
  counts_.control_characters += repairs.control_characters;
  // Byte offsets in later errors of this event count in the repaired text.
  if ((error = iterate_zero_padded(repaired_))) fail_json(error);
}

// simdjson looks into the padding after a document, and on an invalid event
// what it finds there can change its verdict (On-Demand accepted
// `{"ph": "X", "e": "b": 6}` when `}, {` followed it, and refused it when
// zeros did). So the event is parsed from its own copy padded with zeros:
// the one-thread import and the two-thread one, whose buffers hold different
// bytes after an event, then agree. Only events the plain reader declined
// come here.
simdjson::error_code ChromeTraceEventReader::iterate_zero_padded(std::string& text) {
  size_t length = text.size();
  text.append(simdjson::SIMDJSON_PADDING, '\0');
  text_begin_ = text.data();
  allocated_end_ = text.data() + text.size();
  auto error = parser_.iterate(text.data(), length, text.size()).get(document_);
  document_ready_ = !error;
  return error;
}

void ChromeTraceEventReader::read_fields(od::object& object) {
  for (auto field_result : object) {
    od::field field;
    if (auto error = std::move(field_result).get(field)) fail_json(error);
    std::string_view key;
    if (!key_text(field, key_scratch_, key)) fail_event("has a key that is not a valid JSON string");
    read_field(key, field.value());
  }
}

void ChromeTraceEventReader::read_field(std::string_view key, od::value value) {
  if (key == "ph") {
    fields_.ph = read_string(value, key);
  } else if (key == "name") {
    fields_.name = read_string(value, key);
  } else if (key == "cat") {
    fields_.cat = read_string(value, key);
  } else if (key == "ts") {
    fields_.ts_ns = read_microseconds(value, key);
  } else if (key == "dur") {
    fields_.dur_ns = read_microseconds(value, key);
  } else if (key == "pid") {
    fields_.pid = read_track_id(value, key);
  } else if (key == "tid") {
    fields_.tid = read_track_id(value, key);
  } else if (key == "id") {
    fields_.flow_id = read_scalar_text(value, key);
  } else if (key == "bp") {
    fields_.bp = read_string(value, key);
  } else if (key == "args") {
    read_args_field(value);
  }
  // Other fields are skipped by the iterator without being parsed.
}

// simdjson 3.0 refuses strings with a lone surrogate escape ("\ud800"),
// which JSON allows and careless writers produce; those are decoded here
// with U+FFFD in place of the surrogate.
std::string_view ChromeTraceEventReader::read_string(od::value& value, std::string_view key) {
  std::string_view raw = trim_trailing_space(value.raw_json_token());
  std::string_view text;
  auto error = value.get_string().get(text);
  if (!error) return text;
  if (error == simdjson::INCORRECT_TYPE) fail_event(fmt::format("\"{}\" is not a string", key));
  std::string& decoded = decoded_strings_.emplace_back();
  if (error != simdjson::STRING_ERROR || raw.size() < 2 || !decode_json_string(raw.substr(1, raw.size() - 2), decoded)) {
    fail_event(fmt::format("\"{}\" is not a valid JSON string", key));
  }
  ++counts_.replaced_surrogates;
  return decoded;
}

int64_t ChromeTraceEventReader::read_microseconds(od::value& value, std::string_view key) {
  od::json_type type{};
  if (auto error = value.type().get(type)) fail_json(error);
  if (type != od::json_type::number) fail_event(fmt::format("\"{}\" is not a number", key));
  int64_t ns = 0;
  switch (microseconds_to_ns(trim_trailing_space(value.raw_json_token()), ns)) {
    case NumberStatus::kOk: return ns;
    case NumberStatus::kOutOfRange: fail_event(fmt::format("\"{}\" is out of range", key));
    case NumberStatus::kNotNumber: break;
  }
  fail_event(fmt::format("\"{}\" is not a number", key));
}

TrackIdField ChromeTraceEventReader::read_track_id(od::value& value, std::string_view key) {
  od::json_type type{};
  if (auto error = value.type().get(type)) fail_json(error);
  TrackIdField id;
  if (type == od::json_type::string) {
    id.is_text = true;
    id.text = read_string(value, key);
  } else if (type != od::json_type::number || value.get_int64().get(id.number)) {
    fail_event(fmt::format("\"{}\" is neither an integer nor a string", key));
  }
  return id;
}

// Flow ids: numbers or strings ("0x1f"); their text is only a key.
std::string_view ChromeTraceEventReader::read_scalar_text(od::value& value, std::string_view key) {
  od::json_type type{};
  if (auto error = value.type().get(type)) fail_json(error);
  if (type != od::json_type::number && type != od::json_type::string) {
    fail_event(fmt::format("\"{}\" is neither a number nor a string", key));
  }
  return trim_trailing_space(value.raw_json_token());
}

// Most events' args are never needed; "ph" usually comes first, so M, C and
// X args are read in place, and otherwise kept as text for a second look.
void ChromeTraceEventReader::read_args_field(od::value& value) {
  if (fields_.ph.empty()) {
    if (auto error = simdjson::to_json_string(value).get(args_json_)) fail_json(error);
    return;
  }
  if (!needs_args(fields_.ph)) return;
  od::object args;
  if (value.get_object().get(args)) fail_event("\"args\" is not an object");
  read_args(args);
  args_read_ = true;
}

void ChromeTraceEventReader::read_args_text() {
  // The text lies inside the event's padded buffer, so it is padded too.
  auto padded = static_cast<size_t>(allocated_end_ - args_json_.data());
  od::document args_doc;
  od::object args;
  if (args_parser_.iterate(args_json_.data(), args_json_.size(), padded).get(args_doc) ||
      args_doc.get_object().get(args)) {
    fail_event("\"args\" is not an object");
  }
  read_args(args);
}

void ChromeTraceEventReader::read_args(od::object& args) {
  for (auto field_result : args) {
    od::field field;
    if (auto error = std::move(field_result).get(field)) fail_json(error);
    std::string_view key;
    if (!key_text(field, key_scratch_, key)) fail_event("has an args key that is not a valid JSON string");
    od::value value = field.value();
    od::json_type type{};
    if (auto error = value.type().get(type)) fail_json(error);
    if (fields_.ph == "C") {
      read_counter_arg(key, value, type);
    } else if (fields_.ph == "M") {
      if (key == "name" && type == od::json_type::string) args_.name = read_string(value, "args.name");
    } else {
      read_span_arg(key, value, type);
    }
  }
}

// Kineto writes "Input Dims", the legacy profiler "Input dims". A
// correlation or size that is not an integer is ignored, not trusted.
void ChromeTraceEventReader::read_span_arg(std::string_view key, od::value& value, od::json_type type) {
  if (key == "correlation" || key == "bytes") {
    int64_t number = 0;
    if (type != od::json_type::number || value.get_int64().get(number) || number < 0) {
      ++counts_.bad_span_args;
      return;
    }
    (key == "bytes" ? args_.bytes : args_.correlation) = number;
  } else if (key == "Input Dims" || key == "Input dims") {
    if (auto error = simdjson::to_json_string(value).get(args_.input_shapes)) fail_json(error);
  }
}

void ChromeTraceEventReader::read_counter_arg(std::string_view key, od::value& value, od::json_type type) {
  double number = 0;
  if (type != od::json_type::number) {
    ++counts_.non_numeric_counter_args;
  } else if (value.get_double().get(number)) {
    fail_event(fmt::format("counter \"{}\" is not a finite number", key));
  } else {
    args_.numbers.emplace_back(key, number);
  }
}

void ChromeTraceEventReader::fail_event(std::string_view what) const { throw_event_error(source_, index_, what); }

// The byte offset is given when simdjson knows where it stopped.
void ChromeTraceEventReader::fail_json(simdjson::error_code error) {
  std::string where;
  const char* location = nullptr;
  if (document_ready_ && !document_.current_location().get(location) && location >= text_begin_ && location < allocated_end_) {
    where = fmt::format(" at byte {}", offset_ + static_cast<uint64_t>(location - text_begin_));
  } else {
    where = fmt::format(" at byte {}", offset_);
  }
  throw InputError(fmt::format("{}: invalid JSON{} (in event #{}): {}", source_, where, index_,
                               simdjson::error_message(error)));
}

}  // namespace stepscope
