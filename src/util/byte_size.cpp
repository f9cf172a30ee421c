#include "util/byte_size.hpp"

#include <array>
#include <cctype>
#include <charconv>
#include <limits>

#include <fmt/format.h>

namespace stepscope {

namespace {

struct Unit {
  char letter;
  uint64_t bytes;
  const char* name;
};

constexpr std::array<Unit, 4> kUnits = {{
    {'K', uint64_t{1} << 10, "KiB"},
    {'M', uint64_t{1} << 20, "MiB"},
    {'G', uint64_t{1} << 30, "GiB"},
    {'T', uint64_t{1} << 40, "TiB"},
}};

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

// The multiplier a suffix stands for: 1 for none (or "B"), nullopt for one
// that is no unit. KB means KiB here, as `ls -h` and `du -h` read it.
std::optional<uint64_t> multiplier(std::string_view suffix) {
  if (suffix.empty() || equal_ignoring_case(suffix, "B")) return 1;
  for (const Unit& unit : kUnits) {
    std::string_view letter(&unit.letter, 1);
    for (std::string_view tail : {"", "B", "iB"}) {
      if (equal_ignoring_case(suffix, fmt::format("{}{}", letter, tail))) return unit.bytes;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<uint64_t> parse_byte_size(std::string_view text) {
  uint64_t number = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (error != std::errc() || end == text.data()) return std::nullopt;
  std::optional<uint64_t> unit = multiplier(text.substr(static_cast<size_t>(end - text.data())));
  if (!unit || number > std::numeric_limits<uint64_t>::max() / *unit) return std::nullopt;
  return number * *unit;
}

std::string describe_byte_size(uint64_t bytes) {
  for (auto unit = kUnits.rbegin(); unit != kUnits.rend(); ++unit) {
    if (bytes < unit->bytes) continue;
    if (bytes % unit->bytes == 0) return fmt::format("{} {}", bytes / unit->bytes, unit->name);
    return fmt::format("{:.1f} {}", static_cast<double>(bytes) / static_cast<double>(unit->bytes), unit->name);
  }
  return fmt::format("{} B", bytes);
}

}  // namespace stepscope
