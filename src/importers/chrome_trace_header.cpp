#include "importers/chrome_trace_header.hpp"

#include <fmt/format.h>

#include "importers/json_text.hpp"
#include "util/error.hpp"

namespace stepscope {

std::optional<std::string> TraceHeaderReader::read(std::string_view key, std::string_view text, uint64_t offset) {
  simdjson::dom::element value;
  auto error = parser_.parse(text.data(), text.size()).get(value);
  if (error == simdjson::STRING_ERROR && text.size() >= 2 && text.front() == '"') {
    // A lone surrogate escape simdjson refuses; decode it ourselves.
    std::string decoded;
    if (decode_json_string(text.substr(1, text.size() - 2), decoded)) return decoded;
  }
  if (error) {
    throw InputError(fmt::format("{}: invalid JSON at byte {} (in header field \"{}\"): {}", source_, offset, key,
                                 simdjson::error_message(error)));
  }
  if (key == "deviceProperties" || key == "distributedInfo") return std::string(text);
  switch (value.type()) {
    case simdjson::dom::element_type::STRING: return std::string(value.get_string().value_unsafe());
    case simdjson::dom::element_type::ARRAY:
    case simdjson::dom::element_type::OBJECT: return std::nullopt;
    default: return std::string(text);  // numbers, booleans, null: as written
  }
}

}  // namespace stepscope
