#include "collectors/python/version.hpp"

#include <cctype>

#include <fmt/format.h>

namespace stepscope::python {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Parses decimal digits at `pos`, advancing it; -1 when there are none.
int parse_number(std::string_view text, size_t& pos) {
  int value = -1;
  while (pos < text.size() && is_digit(text[pos]) && value < 100000) {
    value = (value < 0 ? 0 : value * 10) + (text[pos] - '0');
    ++pos;
  }
  return value;
}

}  // namespace

PythonVersion version_from_hex(uint64_t hex) {
  PythonVersion version;
  version.major = static_cast<int>((hex >> 24) & 0xff);
  version.minor = static_cast<int>((hex >> 16) & 0xff);
  version.micro = static_cast<int>((hex >> 8) & 0xff);
  const unsigned level = (hex >> 4) & 0xf;
  const unsigned serial = hex & 0xf;
  version.text = fmt::format("{}.{}.{}", version.major, version.minor, version.micro);
  if (level == 0xa) version.text += fmt::format("a{}", serial);
  if (level == 0xb) version.text += fmt::format("b{}", serial);
  if (level == 0xc) version.text += fmt::format("rc{}", serial);
  return version;
}

std::optional<PythonVersion> version_from_file_name(std::string_view path) {
  std::string_view name = path.substr(path.rfind('/') + 1);
  if (name.starts_with("lib")) name.remove_prefix(3);
  if (!name.starts_with("python")) return std::nullopt;
  size_t pos = 6;
  PythonVersion version;
  version.major = parse_number(name, pos);
  if (version.major < 0 || pos >= name.size() || name[pos] != '.') return std::nullopt;
  ++pos;
  version.minor = parse_number(name, pos);
  if (version.minor < 0) return std::nullopt;
  version.text = fmt::format("{}.{}", version.major, version.minor);
  return version;
}

std::optional<PythonVersion> version_from_rodata(std::string_view rodata, int major, int minor) {
  const std::string prefix = fmt::format("{}.{}.", major, minor);
  for (size_t at = rodata.find(prefix); at != std::string_view::npos;
       at = rodata.find(prefix, at + 1)) {
    if (at > 0 && (is_digit(rodata[at - 1]) || rodata[at - 1] == '.')) continue;
    size_t pos = at + prefix.size();
    int micro = parse_number(rodata, pos);
    if (micro < 0) continue;
    size_t end = pos;  // a release tag such as a1, rc2 or a '+' may follow
    while (end < rodata.size() && end - pos < 6 && (std::isalnum(static_cast<unsigned char>(rodata[end])) || rodata[end] == '+')) {
      ++end;
    }
    if (end >= rodata.size() || rodata[end] != '\0') continue;
    return PythonVersion{major, minor, micro, std::string(rodata.substr(at, end - at))};
  }
  return std::nullopt;
}

}  // namespace stepscope::python
