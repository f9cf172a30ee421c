#include "importers/plain_event_reader.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <string_view>

#include "importers/json_scan.hpp"
#include "importers/json_text.hpp"

namespace stepscope {

static_assert(json_scan::kReadAhead <= PlainEventReader::kReadAhead, "the scans' loads stay in the read-ahead");

namespace {

// Deeper values are left to simdjson (its own limit is far higher).
constexpr int kMaxDepth = 64;
// Integers of up to 18 digits cannot overflow int64.
constexpr size_t kMaxIntegerDigits = 18;

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// The bytes of one event, read with a cursor; nullptr stands for "declined".
class Cursor {
 public:
  explicit Cursor(const char* end) : end_(end) {}
  const char* end() const { return end_; }

  const char* skip_space(const char* p) const {
    while (p < end_ && is_space(*p)) ++p;
    return p;
  }

  // p past `c` and the white space around it; nullptr when `c` is not next.
  // Kineto writes ": " and ", " (and [1, 2, 3]): that form is matched with
  // one compare, where the loops of skip_space took a quarter of the
  // reader's instructions (cachegrind).
  const char* separator(const char* p, char c) const {
    if (usual_separator(p, c)) return p + 2;
    p = skip_space(p);
    if (p >= end_ || *p != c) return nullptr;
    return skip_space(p + 1);
  }

  // Whether `c`, one space and something else (no white space) are at p.
  // Loads 3 bytes from p (at most end_): past the end, the read-ahead.
  bool usual_separator(const char* p, char c) const {
    uint16_t two = 0;
    std::memcpy(&two, p, 2);
    return end_ - p >= 2 && two == static_cast<uint16_t>(static_cast<unsigned char>(c) | (' ' << 8)) &&
           static_cast<unsigned char>(p[2]) > ' ';
  }

  // The first byte at or after p that is '"', '\\', a control character or
  // not ASCII; end_ when there is none.
  const char* find_string_special(const char* p) const { return json_scan::find_string_special(p, end_); }

  // A string without escapes at p ('"'): its body, and p past its end.
  const char* plain_string(const char* p, std::string_view& body) const {
    if (p >= end_ || *p != '"') return nullptr;
    const char* close = find_string_special(p + 1);
    if (close >= end_ || *close != '"') return nullptr;
    body = std::string_view(p + 1, static_cast<size_t>(close - p - 1));
    return close + 1;
  }

  // Any valid string at p ('"'), escapes allowed since it is not decoded.
  const char* skip_string(const char* p) const {
    for (++p;;) {
      p = find_string_special(p);
      if (p >= end_) return nullptr;
      if (*p == '"') return p + 1;
      if (*p != '\\' || p + 1 >= end_) return nullptr;  // a control character or not ASCII
      char escape = p[1];
      if (escape == 'u') {
        if (p + 6 > end_) return nullptr;
        for (int i = 2; i < 6; ++i) {
          if (!std::isxdigit(static_cast<unsigned char>(p[i]))) return nullptr;
        }
        p += 6;
      } else if (std::strchr("\"\\/bfnrt", escape) != nullptr && escape != '\0') {
        p += 2;
      } else {
        return nullptr;
      }
    }
  }

  // The end of a JSON number at p.
  const char* number_end(const char* p) const {
    if (p < end_ && *p == '-') ++p;
    if (p >= end_) return nullptr;
    if (*p == '0') {
      ++p;
    } else if (is_digit(*p)) {
      while (p < end_ && is_digit(*p)) ++p;
    } else {
      return nullptr;
    }
    if (p < end_ && *p == '.') {
      if (++p >= end_ || !is_digit(*p)) return nullptr;
      while (p < end_ && is_digit(*p)) ++p;
    }
    if (p < end_ && (*p == 'e' || *p == 'E')) {
      if (++p < end_ && (*p == '+' || *p == '-')) ++p;
      if (p >= end_ || !is_digit(*p)) return nullptr;
      while (p < end_ && is_digit(*p)) ++p;
    }
    return p;
  }

  // A number at p: its text, and p past it.
  const char* number(const char* p, std::string_view& text) const {
    const char* after = number_end(p);
    if (after != nullptr) text = std::string_view(p, static_cast<size_t>(after - p));
    return after;
  }

  // A plain integer (no fraction, no exponent, at most 18 digits, not -0),
  // read in one pass (pids, tids and correlations: three per event).
  const char* integer(const char* p, int64_t& value) const {
    bool negative = p < end_ && *p == '-';
    const char* digits = negative ? p + 1 : p;
    const char* q = digits;
    uint64_t magnitude = 0;  // wraps harmlessly past 19 digits: refused below
    for (; q < end_ && is_digit(*q); ++q) magnitude = magnitude * 10 + static_cast<uint64_t>(*q - '0');
    auto count = static_cast<size_t>(q - digits);
    if (count == 0 || count > kMaxIntegerDigits || (count > 1 && *digits == '0')) return nullptr;
    if (q < end_ && (*q == '.' || *q == 'e' || *q == 'E')) return nullptr;  // not plain, or not JSON
    if (negative && magnitude == 0) return nullptr;
    value = negative ? -static_cast<int64_t>(magnitude) : static_cast<int64_t>(magnitude);
    return q;
  }

  const char* literal(const char* p, std::string_view word) const {
    if (static_cast<size_t>(end_ - p) < word.size() || std::memcmp(p, word.data(), word.size()) != 0) return nullptr;
    return p + word.size();
  }

  // Any JSON value at p, validated and not kept.
  const char* skip_value(const char* p, int depth) const {
    if (p >= end_) return nullptr;
    switch (*p) {
      case '"': return skip_string(p);
      case '{': return skip_container(p, depth, '}');
      case '[': return skip_container(p, depth, ']');
      case 't': return literal(p, "true");
      case 'f': return literal(p, "false");
      case 'n': return literal(p, "null");
      default: return number_end(p);
    }
  }

  // An object or array at p ('{' or '['), up to its `close`.
  const char* skip_container(const char* p, int depth, char close) const {
    if (depth >= kMaxDepth) return nullptr;
    p = skip_space(p + 1);
    if (p < end_ && *p == close) return p + 1;
    for (;;) {
      if (close == '}') {
        if (p >= end_ || *p != '"' || (p = skip_string(p)) == nullptr) return nullptr;
        if ((p = separator(p, ':')) == nullptr) return nullptr;
      }
      if ((p = skip_value(p, depth + 1)) == nullptr) return nullptr;
      if (usual_separator(p, ',')) {
        p += 2;
        continue;
      }
      p = skip_space(p);
      if (p >= end_) return nullptr;
      if (*p == close) return p + 1;
      if (*p != ',') return nullptr;
      p = skip_space(p + 1);
    }
  }

  // Walks the members of the object at p ('{'), calling
  // on_member(key, value_position) -> position after the value (or nullptr).
  template <typename OnMember>
  const char* members(const char* p, OnMember&& on_member) const {
    if (p >= end_ || *p != '{') return nullptr;
    p = skip_space(p + 1);
    if (p < end_ && *p == '}') return p + 1;
    for (;;) {
      std::string_view key;
      if ((p = plain_string(p, key)) == nullptr || (p = separator(p, ':')) == nullptr) return nullptr;
      if ((p = on_member(key, p)) == nullptr) return nullptr;
      if (usual_separator(p, ',')) {
        p += 2;
        continue;
      }
      p = skip_space(p);
      if (p >= end_) return nullptr;
      if (*p == '}') return p + 1;
      if (*p != ',') return nullptr;
      p = skip_space(p + 1);
    }
  }

 private:
  const char* end_;
};

// Whether the 8 bytes at p are all decimal digits, and their value: eight
// digits at once (SWAR), for the 16-digit timestamps of epoch traces.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "eight_digits reads digits as a little-endian word");
bool eight_digits(const char* p, uint64_t& value) {
  uint64_t chunk = 0;
  std::memcpy(&chunk, p, 8);
  constexpr uint64_t kHigh = 0xF0F0F0F0F0F0F0F0ULL;
  if (((chunk & kHigh) | (((chunk + 0x0606060606060606ULL) & kHigh) >> 4)) != 0x3333333333333333ULL) return false;
  chunk -= 0x3030303030303030ULL;
  chunk = chunk * 10 + (chunk >> 8);  // pairs of digits (little-endian)
  constexpr uint64_t kMask = 0x000000FF000000FFULL;
  value = (((chunk & kMask) * (100 + (1000000ULL << 32))) + (((chunk >> 16) & kMask) * (1 + (10000ULL << 32)))) >> 32;
  return true;
}

bool needs_args(std::string_view ph) { return ph == "M" || ph == "C" || ph == "X"; }

// Reads the fields of one event; members() drives it.
class EventParse {
 public:
  EventParse(const Cursor& cursor, EventFields& fields, EventArgs& args, PlainEventCounts& counts)
      : in_(cursor), fields_(fields), args_(args), counts_(counts) {}

  const char* event(const char* p) {
    const char* after = in_.members(p, [this](std::string_view key, const char* value) { return field(key, value); });
    if (after == nullptr || !phase_known()) return nullptr;  // no "ph" is an error simdjson words
    clear_unseen();
    if (args_at_ != nullptr && !args_read_ && needs_args(fields_.ph) && args(args_at_) == nullptr) return nullptr;
    return after;
  }

 private:
  // Each known key once: with duplicates, which one wins is simdjson's to say.
  enum Seen : unsigned {
    kPh = 1, kName = 2, kCat = 4, kTs = 8, kDur = 16, kPid = 32, kTid = 64, kId = 128, kBp = 256, kArgs = 512
  };

  // The caller's fields are not reset before an event (zeroing them cost
  // more than reading some events): those the event lacks are cleared here.
  void clear_unseen() {
    if ((seen_ & kName) == 0) fields_.name = {};
    if ((seen_ & kCat) == 0) fields_.cat = {};
    if ((seen_ & kBp) == 0) fields_.bp = {};
    if ((seen_ & kId) == 0) fields_.flow_id = {};
    if ((seen_ & kPid) == 0) fields_.pid = TrackIdField{};
    if ((seen_ & kTid) == 0) fields_.tid = TrackIdField{};
    if ((seen_ & kTs) == 0) fields_.ts_ns.reset();
    if ((seen_ & kDur) == 0) fields_.dur_ns.reset();
  }

  bool first_sight(Seen key) {
    if ((seen_ & key) != 0) return false;
    seen_ |= key;
    return true;
  }

  const char* field(std::string_view key, const char* p) {
    switch (key.size()) {
      case 2:
        if (key == "ph") return first_sight(kPh) ? in_.plain_string(p, fields_.ph) : nullptr;
        if (key == "ts") return first_sight(kTs) ? microseconds(p, fields_.ts_ns) : nullptr;
        if (key == "id") return first_sight(kId) ? flow_id(p) : nullptr;
        if (key == "bp") return first_sight(kBp) ? in_.plain_string(p, fields_.bp) : nullptr;
        break;
      case 3:
        if (key == "cat") return first_sight(kCat) ? in_.plain_string(p, fields_.cat) : nullptr;
        if (key == "pid") return first_sight(kPid) ? track_id(p, fields_.pid) : nullptr;
        if (key == "tid") return first_sight(kTid) ? track_id(p, fields_.tid) : nullptr;
        if (key == "dur") return first_sight(kDur) ? microseconds(p, fields_.dur_ns) : nullptr;
        break;
      case 4:
        if (key == "name") return first_sight(kName) ? in_.plain_string(p, fields_.name) : nullptr;
        if (key == "args") return first_sight(kArgs) ? args_field(p) : nullptr;
        break;
      default: break;
    }
    return in_.skip_value(p, 1);
  }

  // Kineto's forms ("1712195497027744.0", "0.382": up to 16 integer and 3
  // fraction digits) in one pass; others through microseconds_to_ns, which
  // gives the same for these.
  const char* microseconds(const char* p, std::optional<int64_t>& ns) {
    constexpr uint64_t kMaxMicros = static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / 1000 - 1;
    const char* end = in_.end();
    const char* q = p;
    bool negative = q < end && *q == '-';
    if (negative) ++q;
    const char* digits = q;
    uint64_t micros = 0;
    for (uint64_t eight = 0; end - q >= 8 && q - digits <= 8 && eight_digits(q, eight); q += 8) {
      micros = micros * 100000000 + eight;
    }
    for (; q < end && is_digit(*q) && q - digits < 16; ++q) micros = micros * 10 + static_cast<uint64_t>(*q - '0');
    if (q == digits || (q - digits > 1 && *digits == '0') || micros > kMaxMicros) return any_microseconds(p, ns);
    uint64_t fraction = 0;
    int fraction_digits = 0;
    if (q < end && *q == '.') {
      for (++q; q < end && is_digit(*q) && fraction_digits < 3; ++q, ++fraction_digits) {
        fraction = fraction * 10 + static_cast<uint64_t>(*q - '0');
      }
      if (fraction_digits == 0) return any_microseconds(p, ns);
    }
    if (q < end && (is_digit(*q) || *q == '.' || *q == 'e' || *q == 'E')) return any_microseconds(p, ns);
    for (; fraction_digits < 3; ++fraction_digits) fraction *= 10;
    auto magnitude = static_cast<int64_t>(micros * 1000 + fraction);
    ns = negative ? -magnitude : magnitude;
    return q;
  }

  const char* any_microseconds(const char* p, std::optional<int64_t>& ns) {
    std::string_view text;
    const char* after = in_.number(p, text);
    int64_t value = 0;
    if (after == nullptr || microseconds_to_ns(text, value) != NumberStatus::kOk) return nullptr;
    ns = value;
    return after;
  }

  const char* track_id(const char* p, TrackIdField& id) {
    id = TrackIdField{};
    if (p < in_.end() && *p == '"') {
      id.is_text = true;
      return in_.plain_string(p, id.text);
    }
    return in_.integer(p, id.number);
  }

  // simdjson's raw token: a number's text, a string with its quotes.
  const char* flow_id(const char* p) {
    const char* after = nullptr;
    if (p < in_.end() && *p == '"') {
      std::string_view body;
      after = in_.plain_string(p, body);
    } else {
      after = in_.number_end(p);
    }
    if (after != nullptr) fields_.flow_id = std::string_view(p, static_cast<size_t>(after - p));
    return after;
  }

  // Whether this event's "ph" has been read (fields_ may hold the last one's).
  bool phase_known() const { return (seen_ & kPh) != 0 && !fields_.ph.empty(); }

  // "ph" usually comes first; args seen before it are read at the end.
  const char* args_field(const char* p) {
    if (!phase_known()) {
      args_at_ = p;
      return in_.skip_value(p, 1);
    }
    if (!needs_args(fields_.ph)) return in_.skip_value(p, 1);
    args_read_ = true;
    return args(p);
  }

  const char* args(const char* p) {
    char phase = fields_.ph[0];
    return in_.members(p, [this, phase](std::string_view key, const char* value) {
      if (phase == 'C') return counter_arg(key, value);
      if (phase == 'M') return metadata_arg(key, value);
      return span_arg(key, value);
    });
  }

  const char* counter_arg(std::string_view key, const char* p) {
    std::string_view text;
    const char* after = in_.number(p, text);
    if (after == nullptr) return nullptr;  // not a number: simdjson counts it
    double value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) return nullptr;
    args_.numbers.emplace_back(key, value);
    return after;
  }

  const char* metadata_arg(std::string_view key, const char* p) {
    if (key == "name" && p < in_.end() && *p == '"') return in_.plain_string(p, args_.name);
    return in_.skip_value(p, 1);
  }

  const char* span_arg(std::string_view key, const char* p) {
    if (key == "correlation" || key == "bytes") {
      int64_t number = 0;
      const char* after = in_.integer(p, number);
      if (after == nullptr) return nullptr;  // other types: simdjson counts them
      if (number < 0) {
        ++counts_.bad_span_args;
      } else {
        (key == "bytes" ? args_.bytes : args_.correlation) = number;
      }
      return after;
    }
    if (key == "Input Dims" || key == "Input dims") {
      if (p >= in_.end() || *p != '[') return nullptr;
      const char* after = in_.skip_value(p, 1);
      if (after != nullptr) args_.input_shapes = std::string_view(p, static_cast<size_t>(after - p));
      return after;
    }
    return in_.skip_value(p, 1);
  }

  const Cursor& in_;
  EventFields& fields_;
  EventArgs& args_;
  PlainEventCounts& counts_;
  unsigned seen_ = 0;
  const char* args_at_ = nullptr;
  bool args_read_ = false;
};

}  // namespace

size_t PlainEventReader::read(const char* data, size_t available, EventFields& fields, EventArgs& args,
                              PlainEventCounts& counts) {
  Cursor cursor(data + available);
  const char* after = EventParse(cursor, fields, args, counts).event(data);
  return after == nullptr ? 0 : static_cast<size_t>(after - data);
}

}  // namespace stepscope
