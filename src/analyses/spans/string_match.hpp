// Matching spans by name through their string ids: a name is tested once per
// distinct string, then each of millions of spans costs one read of a table
// instead of a string comparison (and the cache miss of fetching the string).
#pragma once

#include <string_view>
#include <vector>

#include "run/string_table.hpp"

namespace stepscope {

// Per string id, whether the string is `text`. Interning makes that one id,
// but a table loaded from a file is not checked for duplicates, so all are found.
std::vector<bool> strings_equal_to(const StringTable& strings, std::string_view text);
// Per string id, whether the string starts with `prefix`.
std::vector<bool> strings_starting_with(const StringTable& strings, std::string_view prefix);
// Per string id, whether the string ends with `suffix`.
std::vector<bool> strings_ending_with(const StringTable& strings, std::string_view suffix);

}  // namespace stepscope
