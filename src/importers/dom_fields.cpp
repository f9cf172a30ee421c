#include "importers/dom_fields.hpp"

#include <charconv>

namespace stepscope {

std::optional<int64_t> dom_integer(simdjson::dom::element value) {
  if (int64_t number; value.get_int64().get(number) == simdjson::SUCCESS) return number;
  std::string_view text;
  if (value.get_string().get(text) != simdjson::SUCCESS) return std::nullopt;
  int64_t number = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return number;
}

std::string dom_text(simdjson::dom::element value) {
  std::string_view text;
  if (value.get_string().get(text) == simdjson::SUCCESS) return std::string(text);
  if (auto number = dom_integer(value)) return std::to_string(*number);
  return {};
}

std::optional<int64_t> integer_field(simdjson::dom::element object, const char* key) {
  simdjson::dom::element value;
  if (object[key].get(value) != simdjson::SUCCESS) return std::nullopt;
  return dom_integer(value);
}

std::string text_field(simdjson::dom::element object, const char* key) {
  simdjson::dom::element value;
  return object[key].get(value) == simdjson::SUCCESS ? dom_text(value) : std::string();
}

}  // namespace stepscope
