#include "run/string_table.hpp"

#include <stdexcept>

namespace stepscope {

StringTable::StringTable() { intern(""); }

StringId StringTable::intern(std::string_view text) {
  if (auto found = index_.find(text); found != index_.end()) return found->second;
  return append_unique(std::string(text));
}

std::optional<StringId> StringTable::find(std::string_view text) const {
  if (auto found = index_.find(text); found != index_.end()) return found->second;
  return std::nullopt;
}

StringId StringTable::append_unique(std::string text) {
  if (strings_.size() >= UINT32_MAX) throw std::length_error("string table is full");
  auto id = static_cast<StringId>(strings_.size());
  const std::string& stored = strings_.emplace_back(std::move(text));
  index_.emplace(std::string_view(stored), id);
  return id;
}

}  // namespace stepscope
