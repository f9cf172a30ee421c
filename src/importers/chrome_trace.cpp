#include "importers/chrome_trace.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <simdjson.h>

#include "util/error.hpp"
#include "util/file_bytes.hpp"

namespace stepscope {

namespace {

namespace od = simdjson::ondemand;

static_assert(kFileBytesPadding >= simdjson::SIMDJSON_PADDING,
              "read_file_bytes must leave the padding simdjson reads past the end");

// ---------------------------------------------------------------------------
// Small text helpers

char ascii_lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return ascii_lower(x) == ascii_lower(y); });
}

bool iends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && iequals(text.substr(text.size() - suffix.size()), suffix);
}

// simdjson's raw tokens run up to the next token, whitespace included.
std::string_view trim_trailing_space(std::string_view token) {
  while (!token.empty() && (token.back() == ' ' || token.back() == '\t' || token.back() == '\n' ||
                            token.back() == '\r')) {
    token.remove_suffix(1);
  }
  return token;
}

// ---------------------------------------------------------------------------
// Timestamps: decimal microseconds to integer nanoseconds, from the text.
// Going through double would lose the last digits of Kineto's nanosecond
// timestamps (1.7e15 us has a resolution of 0.25 us as a double).

enum class NumberStatus { kOk, kNotNumber, kOutOfRange };

bool is_digit(char c) { return c >= '0' && c <= '9'; }

NumberStatus microseconds_via_double(std::string_view text, int64_t& ns) {
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc::result_out_of_range) return NumberStatus::kOutOfRange;
  if (ec != std::errc() || end != text.data() + text.size()) return NumberStatus::kNotNumber;
  double scaled = value * 1000.0;
  if (!std::isfinite(scaled) || std::fabs(scaled) >= 9.2e18) return NumberStatus::kOutOfRange;
  ns = std::llround(scaled);
  return NumberStatus::kOk;
}

NumberStatus microseconds_to_ns(std::string_view text, int64_t& ns) {
  constexpr uint64_t kMaxMicros = static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / 1000 - 1;
  size_t pos = 0;
  bool negative = pos < text.size() && text[pos] == '-';
  if (negative) ++pos;
  if (pos == text.size() || !is_digit(text[pos])) return NumberStatus::kNotNumber;
  uint64_t micros = 0;
  for (; pos < text.size() && is_digit(text[pos]); ++pos) {
    micros = micros * 10 + static_cast<uint64_t>(text[pos] - '0');
    if (micros > kMaxMicros) return microseconds_via_double(text, ns);
  }
  uint64_t fraction_ns = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    if (pos == text.size() || !is_digit(text[pos])) return NumberStatus::kNotNumber;
    int digits = 0;
    for (; pos < text.size() && is_digit(text[pos]); ++pos, ++digits) {
      if (digits < 3) fraction_ns = fraction_ns * 10 + static_cast<uint64_t>(text[pos] - '0');
      if (digits == 3 && text[pos] >= '5') ++fraction_ns;  // round half away from zero
    }
    for (; digits < 3; ++digits) fraction_ns *= 10;
  }
  if (pos < text.size() && (text[pos] == 'e' || text[pos] == 'E')) return microseconds_via_double(text, ns);
  if (pos != text.size()) return NumberStatus::kNotNumber;
  auto magnitude = static_cast<int64_t>(micros * 1000 + fraction_ns);
  ns = negative ? -magnitude : magnitude;
  return NumberStatus::kOk;
}

// ---------------------------------------------------------------------------
// Invalid UTF-8: simdjson rejects the whole document, but a trace whose
// function names carry a stray Latin-1 byte is still worth reading. Each
// invalid byte becomes U+FFFD and the import says so in its warnings.

size_t valid_utf8_sequence_length(std::string_view text, size_t pos) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  unsigned char lead = byte(pos);
  if (lead < 0x80) return 1;
  size_t length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC2 ? 2 : 0;
  if (length == 0 || lead > 0xF4 || pos + length > text.size()) return 0;
  for (size_t i = 1; i < length; ++i) {
    if ((byte(pos + i) & 0xC0) != 0x80) return 0;
  }
  unsigned char second = byte(pos + 1);
  if (lead == 0xE0 && second < 0xA0) return 0;  // overlong
  if (lead == 0xED && second > 0x9F) return 0;  // surrogate
  if (lead == 0xF0 && second < 0x90) return 0;  // overlong
  if (lead == 0xF4 && second > 0x8F) return 0;  // beyond U+10FFFF
  return length;
}

std::string replace_invalid_utf8(std::string_view text, size_t& replaced) {
  std::string out;
  out.reserve(text.size() + text.size() / 8 + kFileBytesPadding);
  replaced = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t length = valid_utf8_sequence_length(text, pos);
    if (length == 0) {
      out += "\xEF\xBF\xBD";
      ++replaced;
      ++pos;
    } else {
      out.append(text.substr(pos, length));
      pos += length;
    }
  }
  out.reserve(out.size() + kFileBytesPadding);  // simdjson reads past the end
  return out;
}

// ---------------------------------------------------------------------------
// A JSON string body (between the quotes) decoded to UTF-8, lone surrogates
// becoming U+FFFD. False on an escape JSON does not allow.

void append_utf8(uint32_t code_point, std::string& out) {
  if (code_point < 0x80) {
    out += static_cast<char>(code_point);
  } else if (code_point < 0x800) {
    out += static_cast<char>(0xC0 | (code_point >> 6));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else if (code_point < 0x10000) {
    out += static_cast<char>(0xE0 | (code_point >> 12));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code_point >> 18));
    out += static_cast<char>(0x80 | ((code_point >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  }
}

// The four hex digits of a \u escape at body[pos..pos+4).
std::optional<uint32_t> hex4(std::string_view body, size_t pos) {
  if (pos + 4 > body.size()) return std::nullopt;
  uint32_t value = 0;
  auto [end, ec] = std::from_chars(body.data() + pos, body.data() + pos + 4, value, 16);
  if (ec != std::errc() || end != body.data() + pos + 4) return std::nullopt;
  return value;
}

bool decode_unicode_escape(std::string_view body, size_t& pos, std::string& out) {
  constexpr uint32_t kReplacement = 0xFFFD;
  std::optional<uint32_t> unit = hex4(body, pos);
  if (!unit) return false;
  pos += 4;
  if (*unit >= 0xD800 && *unit <= 0xDBFF && body.substr(pos, 2) == "\\u") {
    std::optional<uint32_t> low = hex4(body, pos + 2);
    if (!low) return false;
    if (*low >= 0xDC00 && *low <= 0xDFFF) {
      pos += 6;
      append_utf8(0x10000 + ((*unit - 0xD800) << 10) + (*low - 0xDC00), out);
      return true;
    }
  }
  bool lone_surrogate = *unit >= 0xD800 && *unit <= 0xDFFF;
  append_utf8(lone_surrogate ? kReplacement : *unit, out);
  return true;
}

bool decode_json_string(std::string_view body, std::string& out) {
  for (size_t pos = 0; pos < body.size();) {
    char c = body[pos++];
    if (c != '\\') {
      out += c;
      continue;
    }
    if (pos == body.size()) return false;
    char escape = body[pos++];
    switch (escape) {
      case '"': case '\\': case '/': out += escape; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u':
        if (!decode_unicode_escape(body, pos, out)) return false;
        break;
      default: return false;
    }
  }
  return true;
}

// ---------------------------------------------------------------------------
// The importer proper.

struct PairHash {
  size_t operator()(const std::pair<int64_t, int64_t>& key) const {
    auto mixed = static_cast<uint64_t>(key.first) * 0x9E3779B97F4A7C15ULL ^ static_cast<uint64_t>(key.second);
    return std::hash<uint64_t>()(mixed);
  }
};

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view text) const { return std::hash<std::string_view>()(text); }
};

template <typename Value>
using StringMap = std::unordered_map<std::string, Value, StringHash, std::equal_to<>>;

using Track = std::pair<int64_t, int64_t>;  // (pid, tid)

// A pid or tid as the trace wrote it: a number, or a string to be mapped.
struct TrackIdField {
  bool is_text = false;
  int64_t number = 0;
  std::string_view text;
};

// The fields of one event that the importer uses. Views point into the
// parser's buffers, valid until the next document is parsed.
struct EventFields {
  std::string_view ph, name, cat, bp, flow_id;
  TrackIdField pid, tid;
  std::optional<int64_t> ts_ns, dur_ns;
  bool args_read = false;           // args already consumed in place
  std::string_view args_json;       // args seen before "ph", kept as text
};

// What the importer keeps of an event's args.
struct EventArgs {
  std::string_view name;  // args.name of M events
  std::vector<std::pair<std::string_view, double>> numbers;  // numeric args of C events
  // Of complete events: Kineto's launch/activity pairing, a copy's size and
  // an op's input shapes (raw JSON text).
  int64_t correlation = 0;
  int64_t bytes = 0;
  std::string_view input_shapes;

  void clear() {  // keeps the vector's buffer for the next event
    name = input_shapes = {};
    numbers.clear();
    correlation = bytes = 0;
  }
};

struct OpenRange {
  int64_t start_ns;
  StringId name;
  SpanKind kind;
};

struct FlowEndpoint {
  uint32_t group;  // one group per (cat, id)
  bool is_start;
  bool binds_enclosing;  // else the next slice (Chrome's default for "f")
  int64_t pid, tid, ts_ns;
};

constexpr SpanId kNoSpan = std::numeric_limits<SpanId>::max();

class ChromeTraceImporter {
 public:
  explicit ChromeTraceImporter(std::string source_name) : source_(std::move(source_name)) {}

  Run import(std::string_view json, size_t capacity) {
    run_.metadata["source"] = source_;
    reserve_for(json.size());
    std::string sanitized;
    od::document doc;
    auto error = parser_.iterate(json.data(), json.size(), capacity).get(doc);
    if (error == simdjson::UTF8_ERROR) {
      // Byte offsets in later errors then count in the repaired text.
      size_t replaced = 0;
      sanitized = replace_invalid_utf8(json, replaced);
      warn(fmt::format("input is not valid UTF-8: {} bytes replaced by U+FFFD", replaced));
      json = sanitized;
      error = parser_.iterate(sanitized.data(), sanitized.size(), sanitized.capacity()).get(doc);
    }
    buffer_begin_ = json.data();
    buffer_end_ = json.data() + json.size();
    buffer_capacity_end_ = json.data() + (json.data() == sanitized.data() ? sanitized.capacity() : capacity);
    if (error) fail_json(error);
    doc_ = &doc;  // only a parsed document can say where it is
    import_document(doc);
    doc_ = nullptr;
    finish();
    return std::move(run_);
  }

 private:
  // --- errors --------------------------------------------------------------

  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(fmt::format("{}: {}", source_, what));
  }

  [[noreturn]] void fail_event(const std::string& what) const {
    fail(fmt::format("event #{}: {}", event_index_, what));
  }

  // The byte offset is given when simdjson knows it; errors found while
  // indexing the whole input (unbalanced brackets) have no single place, and
  // for those that mean "ended too early" the end is the place to look.
  [[noreturn]] void fail_json(simdjson::error_code error) const {
    std::string where;
    const char* location = nullptr;
    if (doc_ != nullptr && !doc_->current_location().get(location) && location > buffer_begin_ &&
        location <= buffer_end_) {
      where = fmt::format(" at byte {}", location - buffer_begin_);
    } else if (error == simdjson::UNCLOSED_STRING || error == simdjson::INCOMPLETE_ARRAY_OR_OBJECT) {
      where = fmt::format(" at byte {} (end of input; truncated?)", buffer_end_ - buffer_begin_);
    }
    if (in_events_) where += fmt::format(" (in event #{})", event_index_);
    fail(fmt::format("invalid JSON{}: {}", where, simdjson::error_message(error)));
  }

  void warn(std::string message) { warnings_.push_back(std::move(message)); }

  // --- document structure --------------------------------------------------

  void reserve_for(size_t json_bytes) {
    // Kineto events average 150-300 bytes; over-reserving a little is cheaper
    // than regrowing vectors of hundreds of thousands of spans.
    run_.spans.reserve(json_bytes / 256);
  }

  void import_document(od::document& doc) {
    od::json_type type{};
    if (auto error = doc.type().get(type)) fail_json(error);
    if (type == od::json_type::array) {
      od::array events;
      if (auto error = doc.get_array().get(events)) fail_json(error);
      import_events(events);
    } else if (type == od::json_type::object) {
      od::object top;
      if (auto error = doc.get_object().get(top)) fail_json(error);
      import_top_object(top);
    } else {
      fail("the trace is neither a JSON array of events nor an object with \"traceEvents\"");
    }
    const char* trailing = nullptr;
    if (!doc.current_location().get(trailing)) {
      fail(fmt::format("unexpected content after the trace at byte {}", trailing - buffer_begin_));
    }
  }

  void import_top_object(od::object& top) {
    bool saw_events = false;
    for (auto field_result : top) {
      od::field field;
      if (auto error = std::move(field_result).get(field)) fail_json(error);
      std::string_view key;
      if (auto error = field.unescaped_key().get(key)) fail_json(error);
      if (key == "traceEvents") {
        od::array events;
        if (field.value().get_array().get(events)) fail("\"traceEvents\" is not an array");
        import_events(events);
        saw_events = true;
      } else {
        import_header_field(key, field.value());
      }
    }
    if (!saw_events) fail("the trace object has no \"traceEvents\" array");
  }

  // Scalars become metadata as text; the two structured fields analyses use
  // are kept as JSON text; other structures (INFO/ERROR logs) are dropped.
  void import_header_field(std::string_view key, od::value value) {
    od::json_type type{};
    if (auto error = value.type().get(type)) fail_json(error);
    std::string_view text;
    if (key == "deviceProperties" || key == "distributedInfo") {
      if (auto error = simdjson::to_json_string(value).get(text)) fail_json(error);
    } else if (type == od::json_type::string) {
      if (value.get_string().get(text)) fail(fmt::format("header field \"{}\" is not a valid string", key));
    } else if (type == od::json_type::number || type == od::json_type::boolean ||
               type == od::json_type::null) {
      text = trim_trailing_space(value.raw_json_token());
    } else {
      return;
    }
    run_.metadata[std::string(key)] = std::string(text);
  }

  void import_events(od::array& events) {
    in_events_ = true;
    for (auto element : events) {
      od::value event;
      if (auto error = element.get(event)) fail_json(error);
      import_event(event);
      ++event_index_;
    }
    in_events_ = false;
  }

  void import_event(od::value& event) {
    od::json_type type{};
    if (auto error = event.type().get(type)) fail_json(error);
    if (type != od::json_type::object) fail_event("is not a JSON object");
    od::object object;
    if (auto error = event.get_object().get(object)) fail_json(error);
    EventFields fields;
    decoded_strings_.clear();
    args_.clear();
    read_fields(object, fields);
    if (fields.ph.empty()) fail_event("has no \"ph\" (phase)");
    if (!fields.args_read && !fields.args_json.empty() && needs_args(fields.ph)) read_args_text(fields);
    dispatch(fields);
  }

  // --- reading fields ------------------------------------------------------

  static bool needs_args(std::string_view ph) { return ph == "M" || ph == "C" || ph == "X"; }

  void read_fields(od::object& object, EventFields& fields) {
    for (auto field_result : object) {
      od::field field;
      if (auto error = std::move(field_result).get(field)) fail_json(error);
      std::string_view key;
      if (auto error = field.unescaped_key().get(key)) fail_json(error);
      read_field(key, field.value(), fields);
    }
  }

  void read_field(std::string_view key, od::value value, EventFields& fields) {
    if (key == "ph") {
      fields.ph = read_string(value, key);
    } else if (key == "name") {
      fields.name = read_string(value, key);
    } else if (key == "cat") {
      fields.cat = read_string(value, key);
    } else if (key == "ts") {
      fields.ts_ns = read_microseconds(value, key);
    } else if (key == "dur") {
      fields.dur_ns = read_microseconds(value, key);
    } else if (key == "pid") {
      fields.pid = read_track_id(value, key);
    } else if (key == "tid") {
      fields.tid = read_track_id(value, key);
    } else if (key == "id") {
      fields.flow_id = read_scalar_text(value, key);
    } else if (key == "bp") {
      fields.bp = read_string(value, key);
    } else if (key == "args") {
      read_args_field(value, fields);
    }
    // Other fields are skipped by the iterator without being parsed.
  }

  // simdjson 3.0 refuses strings with a lone surrogate escape ("\ud800"),
  // which JSON allows and careless writers produce; those are decoded here
  // with U+FFFD in place of the surrogate.
  std::string_view read_string(od::value& value, std::string_view key) {
    std::string_view raw = trim_trailing_space(value.raw_json_token());
    std::string_view text;
    auto error = value.get_string().get(text);
    if (!error) return text;
    if (error == simdjson::INCORRECT_TYPE) fail_event(fmt::format("\"{}\" is not a string", key));
    std::string& decoded = decoded_strings_.emplace_back();
    if (error != simdjson::STRING_ERROR || raw.size() < 2 ||
        !decode_json_string(raw.substr(1, raw.size() - 2), decoded)) {
      fail_event(fmt::format("\"{}\" is not a valid JSON string", key));
    }
    ++replaced_surrogates_;
    return decoded;
  }

  int64_t read_microseconds(od::value& value, std::string_view key) {
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

  TrackIdField read_track_id(od::value& value, std::string_view key) {
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
  std::string_view read_scalar_text(od::value& value, std::string_view key) {
    od::json_type type{};
    if (auto error = value.type().get(type)) fail_json(error);
    if (type != od::json_type::number && type != od::json_type::string) {
      fail_event(fmt::format("\"{}\" is neither a number nor a string", key));
    }
    return trim_trailing_space(value.raw_json_token());
  }

  // Most events' args are never needed; "ph" usually comes first, so M and C
  // args are read in place, and otherwise kept as text for a second look.
  void read_args_field(od::value& value, EventFields& fields) {
    if (fields.ph.empty()) {
      if (auto error = simdjson::to_json_string(value).get(fields.args_json)) fail_json(error);
      return;
    }
    if (!needs_args(fields.ph)) return;
    od::object args;
    if (value.get_object().get(args)) fail_event("\"args\" is not an object");
    read_args(args, fields.ph);
    fields.args_read = true;
  }

  void read_args_text(EventFields& fields) {
    // The text lies inside the padded input buffer, so it is padded too.
    size_t capacity = static_cast<size_t>(buffer_capacity_end_ - fields.args_json.data());
    od::document args_doc;
    od::object args;
    if (args_parser_.iterate(fields.args_json.data(), fields.args_json.size(), capacity).get(args_doc) ||
        args_doc.get_object().get(args)) {
      fail_event("\"args\" is not an object");
    }
    read_args(args, fields.ph);
  }

  void read_args(od::object& args, std::string_view ph) {
    for (auto field_result : args) {
      od::field field;
      if (auto error = std::move(field_result).get(field)) fail_json(error);
      std::string_view key;
      if (auto error = field.unescaped_key().get(key)) fail_json(error);
      od::value value = field.value();
      od::json_type type{};
      if (auto error = value.type().get(type)) fail_json(error);
      if (ph == "C") {
        read_counter_arg(key, value, type);
      } else if (ph == "M") {
        if (key == "name" && type == od::json_type::string) args_.name = read_string(value, "args.name");
      } else {
        read_span_arg(key, value, type);
      }
    }
  }

  // Kineto writes "Input Dims", the legacy profiler "Input dims". A
  // correlation or size that is not an integer is ignored, not trusted.
  void read_span_arg(std::string_view key, od::value& value, od::json_type type) {
    if (key == "correlation" || key == "bytes") {
      int64_t number = 0;
      if (type != od::json_type::number || value.get_int64().get(number) || number < 0) {
        ++bad_span_args_;
        return;
      }
      (key == "bytes" ? args_.bytes : args_.correlation) = number;
    } else if (key == "Input Dims" || key == "Input dims") {
      if (auto error = simdjson::to_json_string(value).get(args_.input_shapes)) fail_json(error);
    }
  }

  void read_counter_arg(std::string_view key, od::value& value, od::json_type type) {
    double number = 0;
    if (type != od::json_type::number) {
      ++non_numeric_counter_args_;
    } else if (value.get_double().get(number)) {
      fail_event(fmt::format("counter \"{}\" is not a finite number", key));
    } else {
      args_.numbers.emplace_back(key, number);
    }
  }

  // --- events --------------------------------------------------------------

  void dispatch(const EventFields& fields) {
    if (fields.ph.size() != 1) return skip_phase(fields.ph);
    switch (fields.ph[0]) {
      case 'X': return add_complete(fields);
      case 'B': return begin_range(fields);
      case 'E': return end_range(fields);
      case 'M': return add_metadata_event(fields);
      case 'C': return add_counter(fields);
      case 'i':
      case 'I': return add_instant(fields);
      case 's':
      case 'f': return add_flow_endpoint(fields);
      default: return skip_phase(fields.ph);
    }
  }

  int64_t require_ts(const EventFields& fields) {
    if (!fields.ts_ns) fail_event("has no \"ts\"");
    last_ts_ns_ = std::max(last_ts_ns_, *fields.ts_ns);
    return *fields.ts_ns;
  }

  Track resolve_track(const EventFields& fields) {
    Track track{resolve_id(fields.pid), resolve_id(fields.tid)};
    note_thread(track, fields.pid, fields.tid);
    return track;
  }

  SpanKind kind_of(const EventFields& fields) {
    if (fields.cat.empty()) return chrome_category_kind({}, fields.pid.text);
    auto found = kind_cache_.find(fields.cat);
    if (found != kind_cache_.end()) return found->second;
    SpanKind kind = chrome_category_kind(fields.cat);
    kind_cache_.emplace(std::string(fields.cat), kind);
    return kind;
  }

  void add_complete(const EventFields& fields) {
    int64_t start = require_ts(fields);
    if (!fields.dur_ns) fail_event("is a complete event (\"X\") without \"dur\"");
    int64_t duration = *fields.dur_ns;
    if (duration < 0) {
      ++negative_durations_;
      duration = 0;
    }
    if (start > std::numeric_limits<int64_t>::max() - duration) fail_event("\"ts\" + \"dur\" is out of range");
    add_span(start, start + duration, resolve_track(fields), kind_of(fields), fields.name);
    Span& span = run_.spans.back();
    span.correlation = args_.correlation;
    span.bytes = args_.bytes;
    if (!args_.input_shapes.empty()) span.detail = run_.strings.intern(args_.input_shapes);
  }

  void add_span(int64_t start, int64_t end, Track track, SpanKind kind, std::string_view name) {
    add_span(start, end, track, kind, run_.strings.intern(name));
  }

  void add_span(int64_t start, int64_t end, Track track, SpanKind kind, StringId name) {
    if (run_.spans.size() >= kNoSpan) fail_event("too many spans");
    last_ts_ns_ = std::max(last_ts_ns_, end);
    run_.spans.push_back(Span{start, end, track.first, track.second, kind, name});
  }

  void begin_range(const EventFields& fields) {
    int64_t start = require_ts(fields);
    Track track = resolve_track(fields);
    open_ranges_[track].push_back(OpenRange{start, run_.strings.intern(fields.name), kind_of(fields)});
  }

  void end_range(const EventFields& fields) {
    int64_t end = require_ts(fields);
    Track track = resolve_track(fields);
    auto found = open_ranges_.find(track);
    if (found == open_ranges_.end() || found->second.empty()) {
      ++unmatched_ends_;
      return;
    }
    OpenRange range = found->second.back();
    found->second.pop_back();
    if (end < range.start_ns) {
      ++ends_before_begins_;
      end = range.start_ns;
    }
    add_span(range.start_ns, end, track, range.kind, range.name);
  }

  void add_metadata_event(const EventFields& fields) {
    int64_t pid = resolve_id(fields.pid);
    if (fields.name == "process_name") {
      note_process(pid, fields.pid).command = run_.strings.intern(args_.name);
    } else if (fields.name == "thread_name") {
      Track track{pid, resolve_id(fields.tid)};
      run_.threads[note_thread(track, fields.pid, fields.tid)].name = run_.strings.intern(args_.name);
    } else {
      note_process(pid, fields.pid);  // sort indexes, labels: the process exists
    }
  }

  void add_counter(const EventFields& fields) {
    int64_t ts = require_ts(fields);
    int64_t pid = resolve_id(fields.pid);
    note_process(pid, fields.pid);
    for (const auto& [key, value] : args_.numbers) {
      CounterTrackId track = counter_track(pid, fields.name, key);
      run_.counter_values.push_back(CounterValue{track, ts, value});
    }
  }

  CounterTrackId counter_track(int64_t pid, std::string_view name, std::string_view key) {
    scratch_.assign(name);
    scratch_ += '.';
    scratch_ += key;
    StringId track_name = run_.strings.intern(scratch_);
    auto [found, inserted] = counter_tracks_.try_emplace(Track{pid, track_name},
                                                         static_cast<CounterTrackId>(run_.counter_tracks.size()));
    if (inserted) run_.counter_tracks.push_back(CounterTrack{track_name, pid, StringTable::kEmpty});
    return found->second;
  }

  void add_instant(const EventFields& fields) {
    require_ts(fields);
    ++instant_events_;
  }

  void add_flow_endpoint(const EventFields& fields) {
    int64_t ts = require_ts(fields);
    if (fields.flow_id.empty()) fail_event("is a flow event without \"id\"");
    Track track{resolve_id(fields.pid), resolve_id(fields.tid)};
    bool is_start = fields.ph == "s";
    bool binds_enclosing = is_start || fields.bp == "e";
    flow_endpoints_.push_back(FlowEndpoint{flow_group(fields.cat, fields.flow_id), is_start, binds_enclosing,
                                           track.first, track.second, ts});
  }

  uint32_t flow_group(std::string_view cat, std::string_view id) {
    scratch_.assign(cat);
    scratch_ += '\x1f';  // ids of different categories are distinct flows (Kineto reuses them)
    scratch_ += id;
    auto [found, inserted] = flow_groups_.try_emplace(scratch_, static_cast<uint32_t>(flow_kinds_.size()));
    if (inserted) flow_kinds_.push_back(run_.strings.intern(cat));
    return found->second;
  }

  void skip_phase(std::string_view ph) {
    ++skipped_phases_[std::string(ph.substr(0, 8))];
  }

  // --- processes and threads -----------------------------------------------

  int64_t resolve_id(const TrackIdField& field) {
    if (!field.is_text) return field.number;
    auto found = synthetic_ids_.find(field.text);
    if (found != synthetic_ids_.end()) return found->second;
    int64_t id = kSyntheticIdBase - static_cast<int64_t>(synthetic_ids_.size());
    synthetic_ids_.emplace(std::string(field.text), id);
    return id;
  }

  Process& note_process(int64_t pid, const TrackIdField& field) {
    auto [found, inserted] = process_index_.try_emplace(pid, run_.processes.size());
    if (inserted) run_.add_process(pid, field.is_text ? field.text : std::string_view());
    return run_.processes[found->second];
  }

  size_t note_thread(Track track, const TrackIdField& pid_field, const TrackIdField& tid_field) {
    if (track == last_thread_ && last_thread_index_ < run_.threads.size()) return last_thread_index_;
    auto [found, inserted] = thread_index_.try_emplace(track, run_.threads.size());
    if (inserted) {
      note_process(track.first, pid_field);
      run_.add_thread(track.first, track.second, tid_field.is_text ? tid_field.text : std::string_view());
    }
    last_thread_ = track;
    last_thread_index_ = found->second;
    return found->second;
  }

  // --- the end -------------------------------------------------------------

  void finish() {
    close_open_ranges();
    bind_flows();
    run_.metadata["clock"] = "trace";
    run_.metadata["source"] = source_;
    run_.metadata["source_format"] = "chrome_trace";
    run_.metadata["instant_events"] = std::to_string(instant_events_);
    summarize_warnings();
  }

  void close_open_ranges() {
    size_t unclosed = 0;
    for (auto& [track, ranges] : open_ranges_) {
      for (const OpenRange& range : ranges) {
        add_span(range.start_ns, std::max(range.start_ns, last_ts_ns_), track, range.kind, range.name);
        ++unclosed;
      }
    }
    if (unclosed > 0) warn(fmt::format("{} \"B\" events without \"E\" closed at the last timestamp", unclosed));
  }

  void bind_flows();

  void summarize_warnings() {
    auto count_warning = [this](size_t count, std::string_view what) {
      if (count > 0) warn(fmt::format("{} {}", count, what));
    };
    count_warning(unmatched_ends_, "\"E\" events without a matching \"B\" ignored");
    count_warning(ends_before_begins_, "\"E\" events before their \"B\" made zero-length");
    count_warning(negative_durations_, "negative \"dur\" values made zero");
    count_warning(non_numeric_counter_args_, "non-numeric counter args ignored");
    count_warning(bad_span_args_, "\"correlation\" or \"bytes\" args that are not non-negative integers ignored");
    count_warning(replaced_surrogates_, "strings with lone surrogate escapes decoded with U+FFFD");
    for (const auto& [phase, count] : skipped_phases_) {
      warn(fmt::format("{} events of unsupported phase \"{}\" skipped", count, phase));
    }
    if (warnings_.empty()) return;
    std::string joined;
    for (const std::string& warning : warnings_) joined += (joined.empty() ? "" : "\n") + warning;
    run_.metadata["import_warnings"] = joined;
  }

  std::string source_;
  Run run_;
  od::parser parser_;
  od::parser args_parser_;
  od::document* doc_ = nullptr;
  const char* buffer_begin_ = nullptr;
  const char* buffer_end_ = nullptr;
  const char* buffer_capacity_end_ = nullptr;
  size_t event_index_ = 0;
  bool in_events_ = false;

  EventArgs args_;
  std::deque<std::string> decoded_strings_;  // strings read_string decoded itself, per event
  std::string scratch_;
  int64_t last_ts_ns_ = std::numeric_limits<int64_t>::min();

  StringMap<int64_t> synthetic_ids_;
  StringMap<SpanKind> kind_cache_;
  std::unordered_map<int64_t, size_t> process_index_;
  std::unordered_map<Track, size_t, PairHash> thread_index_;
  Track last_thread_{std::numeric_limits<int64_t>::min(), 0};
  size_t last_thread_index_ = std::numeric_limits<size_t>::max();
  std::unordered_map<Track, std::vector<OpenRange>, PairHash> open_ranges_;
  std::unordered_map<Track, CounterTrackId, PairHash> counter_tracks_;
  StringMap<uint32_t> flow_groups_;
  std::vector<StringId> flow_kinds_;
  std::vector<FlowEndpoint> flow_endpoints_;

  size_t instant_events_ = 0;
  size_t unmatched_ends_ = 0;
  size_t ends_before_begins_ = 0;
  size_t negative_durations_ = 0;
  size_t non_numeric_counter_args_ = 0;
  size_t bad_span_args_ = 0;
  size_t replaced_surrogates_ = 0;
  std::map<std::string, size_t> skipped_phases_;
  std::vector<std::string> warnings_;
};

// ---------------------------------------------------------------------------
// Flow binding. Chrome binds a flow event to a slice on its own thread: "s"
// (and "f" with "bp":"e") to the innermost slice enclosing its timestamp,
// other "f" to the next slice starting at or after it. Kineto puts each
// endpoint exactly at the start of its slice (the runtime launch, the kernel).

bool track_less(const Span& a, const Span& b) {
  return std::tie(a.pid, a.tid) < std::tie(b.pid, b.tid);
}

// Span ids ordered by track, then start, outer (longer) slices first.
std::vector<SpanId> spans_in_track_order(const std::vector<Span>& spans) {
  std::vector<SpanId> order(spans.size());
  std::iota(order.begin(), order.end(), SpanId{0});
  std::sort(order.begin(), order.end(), [&](SpanId a, SpanId b) {
    const Span& x = spans[a];
    const Span& y = spans[b];
    return std::tie(x.pid, x.tid, x.start_ns, y.end_ns, a) < std::tie(y.pid, y.tid, y.start_ns, x.end_ns, b);
  });
  return order;
}

SpanId next_slice(const std::vector<Span>& spans, const std::vector<SpanId>& order, const FlowEndpoint& end) {
  auto found = std::lower_bound(order.begin(), order.end(), end, [&](SpanId id, const FlowEndpoint& e) {
    const Span& s = spans[id];
    return std::tie(s.pid, s.tid, s.start_ns) < std::tie(e.pid, e.tid, e.ts_ns);
  });
  if (found == order.end() || spans[*found].pid != end.pid || spans[*found].tid != end.tid) return kNoSpan;
  return *found;
}

// The bound span of every endpoint (kNoSpan when none), by one sweep over
// tracks with a stack of the slices open at the current time.
std::vector<SpanId> bind_endpoints(const std::vector<Span>& spans, const std::vector<FlowEndpoint>& endpoints) {
  std::vector<SpanId> order = spans_in_track_order(spans);
  std::vector<uint32_t> by_time(endpoints.size());
  std::iota(by_time.begin(), by_time.end(), uint32_t{0});
  std::sort(by_time.begin(), by_time.end(), [&](uint32_t a, uint32_t b) {
    const FlowEndpoint& x = endpoints[a];
    const FlowEndpoint& y = endpoints[b];
    return std::tie(x.pid, x.tid, x.ts_ns, a) < std::tie(y.pid, y.tid, y.ts_ns, b);
  });
  std::vector<SpanId> bound(endpoints.size(), kNoSpan);
  std::vector<SpanId> open;
  size_t next = 0;
  Span current{};
  bool have_track = false;
  for (uint32_t index : by_time) {
    const FlowEndpoint& end = endpoints[index];
    Span probe{};
    probe.pid = end.pid;
    probe.tid = end.tid;
    if (!have_track || track_less(current, probe)) {
      open.clear();
      current = probe;
      have_track = true;
      while (next < order.size() && track_less(spans[order[next]], probe)) ++next;
    }
    if (!end.binds_enclosing) {
      bound[index] = next_slice(spans, order, end);
      continue;
    }
    for (; next < order.size() && !track_less(probe, spans[order[next]]) &&
           spans[order[next]].start_ns <= end.ts_ns;
         ++next) {
      const Span& starting = spans[order[next]];
      while (!open.empty() && spans[open.back()].end_ns < starting.start_ns) open.pop_back();
      open.push_back(order[next]);
    }
    while (!open.empty() && spans[open.back()].end_ns < end.ts_ns) open.pop_back();
    if (!open.empty()) bound[index] = open.back();
  }
  return bound;
}

void ChromeTraceImporter::bind_flows() {
  std::vector<SpanId> bound = bind_endpoints(run_.spans, flow_endpoints_);
  // Group bound endpoints by flow, starts before ends, each in time order.
  std::vector<uint32_t> order;
  order.reserve(flow_endpoints_.size());
  size_t unbound = 0;
  for (uint32_t i = 0; i < flow_endpoints_.size(); ++i) {
    if (bound[i] == kNoSpan) {
      ++unbound;
    } else {
      order.push_back(i);
    }
  }
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const FlowEndpoint& x = flow_endpoints_[a];
    const FlowEndpoint& y = flow_endpoints_[b];
    return std::tuple(x.group, !x.is_start, x.ts_ns, a) < std::tuple(y.group, !y.is_start, y.ts_ns, b);
  });
  size_t unpaired = 0;
  for (size_t begin = 0; begin < order.size();) {
    size_t end = begin;
    while (end < order.size() && flow_endpoints_[order[end]].group == flow_endpoints_[order[begin]].group) ++end;
    // One start may feed several ends (one launch, several kernels); an end
    // pairs with the latest start at or before it, else with the first.
    size_t starts_end = begin;
    while (starts_end < end && flow_endpoints_[order[starts_end]].is_start) ++starts_end;
    if (starts_end == begin || starts_end == end) {
      unpaired += end - begin;
    }
    size_t s = begin;
    for (size_t f = starts_end; f < end && starts_end > begin; ++f) {
      while (s + 1 < starts_end && flow_endpoints_[order[s + 1]].ts_ns <= flow_endpoints_[order[f]].ts_ns) ++s;
      run_.flows.push_back(Flow{bound[order[s]], bound[order[f]], flow_kinds_[flow_endpoints_[order[f]].group]});
    }
    begin = end;
  }
  if (unbound > 0) warn(fmt::format("{} flow events not on any slice of their thread ignored", unbound));
  if (unpaired > 0) warn(fmt::format("{} flow events without a partner ignored", unpaired));
}

}  // namespace

// Category names come from Kineto's ActivityType names (libkineto
// ActivityType.cpp) and from the traces in testdata: CUDA and ROCm both use
// the cuda_* names, MTIA uses mtia_runtime and mtia_ccp_events (its device
// activity). PyTorch 1.8-era Kineto used capitalised names ("Operator",
// "Kernel", "Runtime", "Memcpy"), hence the case-insensitive match. Everything
// else (Trace, overhead, ...) stays kOther rather than being guessed into a
// kind analyses would then trust.
SpanKind chrome_category_kind(std::string_view category, std::string_view process_name) {
  if (category.empty()) {
    // The legacy autograd profiler: no categories, pid names the side.
    if (iequals(process_name, "CPU functions")) return SpanKind::kCpuOp;
    if (iequals(process_name, "CUDA functions")) return SpanKind::kKernel;
    return SpanKind::kOther;
  }
  if (iequals(category, "cpu_op") || iequals(category, "operator")) return SpanKind::kCpuOp;
  if (iequals(category, "user_annotation")) return SpanKind::kUserRange;
  if (iequals(category, "gpu_user_annotation")) return SpanKind::kDeviceAnnotation;
  if (iequals(category, "python_function")) return SpanKind::kPythonFunction;
  if (iequals(category, "cuda_sync")) return SpanKind::kSync;
  if (iequals(category, "runtime") || iends_with(category, "_runtime") || iends_with(category, "_driver")) {
    return SpanKind::kRuntimeCall;
  }
  if (iequals(category, "kernel") || iends_with(category, "_ccp_events")) return SpanKind::kKernel;
  if (iequals(category, "gpu_memcpy") || iequals(category, "memcpy")) return SpanKind::kMemcpy;
  if (iequals(category, "gpu_memset") || iequals(category, "memset")) return SpanKind::kMemset;
  return SpanKind::kOther;
}

Run import_chrome_trace_bytes(std::string_view json, const std::string& source_name) {
  simdjson::padded_string padded(json);
  return ChromeTraceImporter(source_name).import(std::string_view(padded.data(), padded.size()),
                                                 padded.size() + simdjson::SIMDJSON_PADDING);
}

Run import_chrome_trace(const std::string& path) {
  std::string bytes = read_file_bytes(path);
  return ChromeTraceImporter(path).import(bytes, bytes.capacity());
}

}  // namespace stepscope
