// Fields of a parsed JSON object (simdjson's DOM) that other programs wrote:
// missing or of another kind reads as absent, and integers written as text
// ("10", as torch's Flight Recorder writes some) read as integers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <simdjson.h>

namespace stepscope {

std::optional<int64_t> dom_integer(simdjson::dom::element value);
// A string's text, or an integer's digits; empty otherwise.
std::string dom_text(simdjson::dom::element value);

std::optional<int64_t> integer_field(simdjson::dom::element object, const char* key);
std::string text_field(simdjson::dom::element object, const char* key);

}  // namespace stepscope
