#include "renderers/escape.hpp"

#include <array>
#include <cstdint>

namespace stepscope {

namespace {

// What to write for each ASCII byte: the byte itself, a fixed replacement,
// or a \xNN escape.
struct AsciiPolicy {
  std::array<std::string_view, 128> replacement{};  // empty: keep the byte
  std::array<bool, 128> hex{};
};

constexpr AsciiPolicy printable_policy() {
  AsciiPolicy policy;
  for (size_t c = 0; c < 0x20; ++c) policy.hex[c] = true;
  policy.hex[0x7F] = true;
  return policy;
}

constexpr AsciiPolicy json_policy() {
  AsciiPolicy policy = printable_policy();
  policy.replacement['"'] = "\\\"";
  policy.replacement['\\'] = "\\\\";
  policy.replacement['<'] = "\\u003c";
  policy.replacement['>'] = "\\u003e";
  policy.replacement['&'] = "\\u0026";
  return policy;
}

constexpr AsciiPolicy xml_policy() {
  AsciiPolicy policy = printable_policy();
  policy.replacement['&'] = "&amp;";
  policy.replacement['<'] = "&lt;";
  policy.replacement['>'] = "&gt;";
  policy.replacement['"'] = "&quot;";
  policy.replacement['\''] = "&apos;";
  return policy;
}

constexpr AsciiPolicy kPrintable = printable_policy();
constexpr AsciiPolicy kJson = json_policy();
constexpr AsciiPolicy kXml = xml_policy();

// The length of the well-formed UTF-8 sequence `bytes` starts with
// (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF), or 0.
size_t utf8_sequence_length(const unsigned char* bytes, size_t size) {
  auto continues = [&](size_t i, unsigned char low = 0x80, unsigned char high = 0xBF) {
    return i < size && bytes[i] >= low && bytes[i] <= high;
  };
  unsigned char lead = bytes[0];
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return continues(1) ? 2 : 0;
  if (lead == 0xE0) return continues(1, 0xA0) && continues(2) ? 3 : 0;
  if (lead == 0xED) return continues(1, 0x80, 0x9F) && continues(2) ? 3 : 0;
  if (lead >= 0xE1 && lead <= 0xEF) return continues(1) && continues(2) ? 3 : 0;
  if (lead == 0xF0) return continues(1, 0x90) && continues(2) && continues(3) ? 4 : 0;
  if (lead >= 0xF1 && lead <= 0xF3) return continues(1) && continues(2) && continues(3) ? 4 : 0;
  if (lead == 0xF4) return continues(1, 0x80, 0x8F) && continues(2) && continues(3) ? 4 : 0;
  return 0;
}

// Well-formed sequences that are still not fit to print: C1 controls
// (terminals act on some of them) and U+FFFE/U+FFFF (not XML characters).
bool is_unprintable_sequence(const unsigned char* bytes, size_t length) {
  if (length == 2) return bytes[0] == 0xC2 && bytes[1] < 0xA0;
  if (length == 3) return bytes[0] == 0xEF && bytes[1] == 0xBF && bytes[2] >= 0xBE;
  return false;
}

// \xNN, with the backslash itself written the way the format writes one.
void append_hex_escape(std::string& out, unsigned char byte, const AsciiPolicy& policy) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  std::string_view backslash = policy.replacement['\\'];
  out.append(backslash.empty() ? std::string_view("\\") : backslash);
  out.push_back('x');
  out.push_back(kDigits[byte >> 4]);
  out.push_back(kDigits[byte & 0xF]);
}

// One pass; runs of bytes that need nothing are appended in one go.
void append_with_policy(std::string& out, std::string_view text, const AsciiPolicy& policy) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  const size_t size = text.size();
  size_t pending = 0;  // first byte not yet appended
  size_t i = 0;
  out.reserve(out.size() + size);
  while (i < size) {
    unsigned char byte = bytes[i];
    if (byte < 0x80) {
      if (!policy.hex[byte] && policy.replacement[byte].empty()) {
        ++i;
        continue;
      }
      out.append(text.data() + pending, i - pending);
      if (policy.hex[byte]) {
        append_hex_escape(out, byte, policy);
      } else {
        out.append(policy.replacement[byte]);
      }
      pending = ++i;
      continue;
    }
    size_t length = utf8_sequence_length(bytes + i, size - i);
    if (length != 0 && !is_unprintable_sequence(bytes + i, length)) {
      i += length;
      continue;
    }
    out.append(text.data() + pending, i - pending);
    size_t escaped = length == 0 ? 1 : length;
    for (size_t k = 0; k < escaped; ++k) append_hex_escape(out, bytes[i + k], policy);
    i += escaped;
    pending = i;
  }
  out.append(text.data() + pending, size - pending);
}

}  // namespace

std::string printable_utf8(std::string_view text) {
  std::string out;
  append_with_policy(out, text, kPrintable);
  return out;
}

void append_printable_utf8(std::string& out, std::string_view text, std::string_view also_escape) {
  if (also_escape.empty()) {
    append_with_policy(out, text, kPrintable);
    return;
  }
  AsciiPolicy policy = kPrintable;
  for (char c : also_escape) {
    auto byte = static_cast<unsigned char>(c);
    if (byte < 0x80) policy.hex[byte] = true;
  }
  append_with_policy(out, text, policy);
}

void append_json_string(std::string& out, std::string_view text) {
  out.push_back('"');
  append_with_policy(out, text, kJson);
  out.push_back('"');
}

void append_xml_text(std::string& out, std::string_view text) {
  append_with_policy(out, text, kXml);
}

std::string printable_shortened(std::string_view text, size_t max_chars) {
  std::string shown = printable_utf8(text);
  if (shown.size() <= max_chars) return shown;
  size_t cut = max_chars < 3 ? 0 : max_chars - 3;
  // Never in the middle of a character: back up over UTF-8 continuation bytes.
  while (cut > 0 && (static_cast<unsigned char>(shown[cut]) & 0xC0) == 0x80) --cut;
  return shown.substr(0, cut) + "...";
}

}  // namespace stepscope
