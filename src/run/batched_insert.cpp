#include "run/batched_insert.hpp"

#include <sqlite3.h>

#include <algorithm>

namespace stepscope {

namespace {

// Past a few dozen rows the statement's setup is paid off; longer statements
// only take longer to prepare.
constexpr int kMaxRowsPerStatement = 64;

std::string insert_sql(std::string_view verb, std::string_view table, int columns, int rows) {
  std::string row = "(?";
  for (int c = 1; c < columns; ++c) row += ",?";
  row += ')';
  std::string sql = std::string(verb) + " INTO " + std::string(table) + " VALUES " + row;
  for (int r = 1; r < rows; ++r) sql += "," + row;
  return sql;
}

// As many rows as SQLite's limit on parameters per statement allows (999 in
// builds before 3.32, 32766 since), at most kMaxRowsPerStatement.
int rows_within_limit(SqliteDb& db, int columns) {
  const int parameters = sqlite3_limit(db.handle(), SQLITE_LIMIT_VARIABLE_NUMBER, -1);
  return std::clamp(parameters / columns, 1, kMaxRowsPerStatement);
}

}  // namespace

BatchedInsert::BatchedInsert(SqliteDb& db, std::string_view verb, std::string_view table, int columns)
    : db_(db),
      verb_(verb),
      table_(table),
      columns_(columns),
      rows_per_statement_(static_cast<size_t>(rows_within_limit(db, columns))) {}

SqliteStatement& BatchedInsert::statement(std::optional<SqliteStatement>& slot, size_t rows) {
  if (!slot) slot.emplace(db_, insert_sql(verb_, table_, columns_, static_cast<int>(rows)).c_str());
  return *slot;
}

}  // namespace stepscope
