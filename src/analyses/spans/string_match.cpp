#include "analyses/spans/string_match.hpp"

namespace stepscope {

std::vector<bool> strings_equal_to(const StringTable& strings, std::string_view text) {
  std::vector<bool> equal(strings.size());
  for (StringId id = 0; id < equal.size(); ++id) equal[id] = strings.get(id) == text;
  return equal;
}

std::vector<bool> strings_starting_with(const StringTable& strings, std::string_view prefix) {
  std::vector<bool> starts(strings.size());
  for (StringId id = 0; id < starts.size(); ++id) starts[id] = strings.get(id).starts_with(prefix);
  return starts;
}

std::vector<bool> strings_ending_with(const StringTable& strings, std::string_view suffix) {
  std::vector<bool> ends(strings.size());
  for (StringId id = 0; id < ends.size(); ++id) ends[id] = strings.get(id).ends_with(suffix);
  return ends;
}

}  // namespace stepscope
