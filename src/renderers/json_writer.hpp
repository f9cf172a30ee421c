// Writing JSON objects field by field into a string. Every string value and
// key goes through append_json_string, so text from programs and traces is
// always escaped; numbers are written with fmt.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "renderers/escape.hpp"

namespace stepscope {

class JsonObject {
 public:
  explicit JsonObject(std::string& out) : out_(out) { out_ += '{'; }
  ~JsonObject() { out_ += '}'; }
  JsonObject(const JsonObject&) = delete;
  JsonObject& operator=(const JsonObject&) = delete;

  // Starts a field whose value the caller appends to the string itself.
  JsonObject& field(std::string_view key) {
    if (!first_) out_ += ',';
    first_ = false;
    append_json_string(out_, key);
    out_ += ':';
    return *this;
  }
  JsonObject& text(std::string_view key, std::string_view value) {
    field(key);
    append_json_string(out_, value);
    return *this;
  }
  // A string, or null when it is empty.
  JsonObject& text_or_null(std::string_view key, std::string_view value) {
    return value.empty() ? literal(key, "null") : text(key, value);
  }
  JsonObject& boolean(std::string_view key, bool value) { return literal(key, value ? "true" : "false"); }
  template <typename Number>
  JsonObject& number(std::string_view key, Number value) {
    field(key);
    out_ += fmt::format("{}", value);
    return *this;
  }
  // A number, or null when it is unknown (JSON has no NaN and no "unknown").
  template <typename Number>
  JsonObject& number_or_null(std::string_view key, const std::optional<Number>& value) {
    return value ? number(key, *value) : literal(key, "null");
  }
  JsonObject& literal(std::string_view key, std::string_view json) {
    field(key);
    out_ += json;
    return *this;
  }

 private:
  std::string& out_;
  bool first_ = true;
};

// Appends `[item, item, ...]`, calling append_item(out, element) for each.
template <typename Range, typename AppendItem>
void append_json_array(std::string& out, const Range& items, AppendItem append_item) {
  out += '[';
  bool first = true;
  for (const auto& item : items) {
    if (!first) out += ',';
    first = false;
    append_item(out, item);
  }
  out += ']';
}

}  // namespace stepscope
