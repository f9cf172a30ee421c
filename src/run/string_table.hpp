// Interned strings: every name, file and command in a Run is stored once and
// referred to by a dense id, so stacks and samples stay small and comparisons
// are integer compares. Strings are raw bytes: nothing here assumes UTF-8,
// because names read out of another process's memory may not be.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace stepscope {

using StringId = uint32_t;

class StringTable {
 public:
  StringTable();
  StringTable(const StringTable&) = delete;
  StringTable& operator=(const StringTable&) = delete;
  StringTable(StringTable&&) = default;
  StringTable& operator=(StringTable&&) = default;

  // Id 0 is always the empty string.
  static constexpr StringId kEmpty = 0;

  StringId intern(std::string_view text);
  // Appends without deduplication lookups; used when loading a file whose
  // strings are already unique and densely numbered.
  StringId append_unique(std::string text);

  const std::string& get(StringId id) const { return strings_.at(id); }
  std::optional<StringId> find(std::string_view text) const;
  size_t size() const { return strings_.size(); }

 private:
  // A deque keeps element addresses stable, so the index can key on views.
  std::deque<std::string> strings_;
  std::unordered_map<std::string_view, StringId> index_;
};

}  // namespace stepscope
