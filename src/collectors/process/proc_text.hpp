// Tokenizing the text of /proc files: blank-separated fields and unsigned
// decimal numbers, strictly (a truncated "12x" is not 12).
#pragma once

#include <charconv>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace stepscope {

// The fields of `line` separated by spaces or tabs.
inline std::vector<std::string_view> split_fields(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t pos = 0;
  while ((pos = line.find_first_not_of(" \t", pos)) != std::string_view::npos) {
    size_t end = line.find_first_of(" \t", pos);
    if (end == std::string_view::npos) end = line.size();
    fields.push_back(line.substr(pos, end - pos));
    pos = end;
  }
  return fields;
}

// The first fields of `line` (at most out.size()) into `out`, without
// allocating; returns how many. Parsers that need a fixed number of fields
// pass an array one longer than that, to tell "exactly" from "more".
inline size_t split_fields(std::string_view line, std::span<std::string_view> out) {
  size_t count = 0;
  size_t pos = 0;
  while (count < out.size() && (pos = line.find_first_not_of(" \t", pos)) != std::string_view::npos) {
    size_t end = line.find_first_of(" \t", pos);
    if (end == std::string_view::npos) end = line.size();
    out[count++] = line.substr(pos, end - pos);
    pos = end;
  }
  return count;
}

// The first field of `text`, empty when it has none.
inline std::string_view first_field(std::string_view text) {
  std::string_view field;
  split_fields(text, std::span<std::string_view>(&field, 1));
  return field;
}

// Calls visit(line) for each line of `text`, without the newline.
template <typename Visit>
void for_each_line(std::string_view text, Visit visit) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    visit(text.substr(pos, end - pos));
    pos = end + 1;
  }
}

template <typename Number>
std::optional<Number> parse_number(std::string_view text) {
  Number value{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace stepscope
