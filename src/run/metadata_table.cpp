#include "run/metadata_table.hpp"

#include <string>

#include <fmt/format.h>

#include "util/error.hpp"
#include "util/whole_number.hpp"

namespace stepscope {

std::optional<int64_t> metadata_table_int(SqliteDb& db, const char* key) {
  SqliteStatement select(db, "SELECT value FROM metadata WHERE key = ?");
  if (!select.bind_text(1, key).step()) return std::nullopt;
  std::string text = select.column_text(0);
  std::optional<int64_t> value = whole_number(text);
  if (!value) {
    throw InputError(fmt::format("{}: table metadata: {} is \"{}\", not a whole number", db.path(), key, text));
  }
  return value;
}

}  // namespace stepscope
