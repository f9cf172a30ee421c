// A decimal whole number that is all of a text: what the run file's metadata
// values and other small fields hold.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>

namespace stepscope {

// "12", "-3"; none for "", "1.5", "12x" or a number out of range.
inline std::optional<int64_t> whole_number(std::string_view text) {
  int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace stepscope
