// Decoding pieces of JSON text by hand, where simdjson's answers are not the
// ones a trace importer needs: timestamps exact to the nanosecond, strings
// with lone surrogates, and repairs of text simdjson refuses outright
// (invalid UTF-8, raw control characters inside strings).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace stepscope {

// ASCII case-insensitive comparisons.
bool iequals(std::string_view a, std::string_view b);
bool iends_with(std::string_view text, std::string_view suffix);

// simdjson's raw tokens run up to the next token, whitespace included.
std::string_view trim_trailing_space(std::string_view token);

enum class NumberStatus { kOk, kNotNumber, kOutOfRange };

// Decimal microseconds (a JSON number's text) to integer nanoseconds,
// rounded half away from zero. Computed from the digits, not via double,
// which would lose the last digits of Kineto's nanosecond timestamps (1.7e15
// us has a resolution of 0.25 us as a double); exponents fall back to double.
NumberStatus microseconds_to_ns(std::string_view text, int64_t& ns);

// Decodes a JSON string body (between the quotes) to UTF-8, appending to
// `out`; lone surrogate escapes become U+FFFD. False on an escape JSON does
// not allow or a truncated escape.
bool decode_json_string(std::string_view body, std::string& out);

// What repair_json_text changed.
struct TextRepairs {
  size_t invalid_utf8_bytes = 0;     // each became U+FFFD
  size_t control_characters = 0;     // raw bytes < 0x20 inside strings, now \u00XX
  bool any() const { return invalid_utf8_bytes > 0 || control_characters > 0; }
};

// A copy of JSON `text` that simdjson accepts where the original differs
// only by invalid UTF-8 (replaced by U+FFFD) or by raw control characters
// inside strings (escaped, so their value is kept). `out` is overwritten and
// keeps `padding` spare capacity for a SIMD parser.
TextRepairs repair_json_text(std::string_view text, std::string& out, size_t padding);

}  // namespace stepscope
