#include "importers/json_text.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>

namespace stepscope {

namespace {

char ascii_lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

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

// --- strings ---------------------------------------------------------------

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

// --- repairs ---------------------------------------------------------------

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

void append_control_escape(unsigned char c, std::string& out) {
  constexpr char kHex[] = "0123456789abcdef";
  out += "\\u00";
  out += kHex[c >> 4];
  out += kHex[c & 0xF];
}

}  // namespace

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return ascii_lower(x) == ascii_lower(y);
         });
}

bool iends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && iequals(text.substr(text.size() - suffix.size()), suffix);
}

std::string_view trim_trailing_space(std::string_view token) {
  while (!token.empty() && (token.back() == ' ' || token.back() == '\t' || token.back() == '\n' ||
                            token.back() == '\r')) {
    token.remove_suffix(1);
  }
  return token;
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

TextRepairs repair_json_text(std::string_view text, std::string& out, size_t padding) {
  TextRepairs repairs;
  out.clear();
  out.reserve(text.size() + text.size() / 4 + padding);
  bool in_string = false;
  for (size_t pos = 0; pos < text.size();) {
    auto c = static_cast<unsigned char>(text[pos]);
    if (c < 0x80) {
      if (in_string && c < 0x20) {
        append_control_escape(c, out);
        ++repairs.control_characters;
      } else {
        out += static_cast<char>(c);
        if (c == '"') in_string = !in_string;
        if (c == '\\' && in_string && pos + 1 < text.size()) {
          out += text[++pos];  // the escaped byte cannot end the string
        }
      }
      ++pos;
      continue;
    }
    size_t length = valid_utf8_sequence_length(text, pos);
    if (length == 0) {
      out += "\xEF\xBF\xBD";
      ++repairs.invalid_utf8_bytes;
      ++pos;
    } else {
      out.append(text.substr(pos, length));
      pos += length;
    }
  }
  out.reserve(out.size() + padding);
  return repairs;
}

}  // namespace stepscope
