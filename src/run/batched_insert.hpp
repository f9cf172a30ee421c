// Appending many rows to one table with multi-row INSERT statements.
//
// SQLite pays a statement's setup (opening the table's cursor, seeking to
// where the row goes, the virtual machine's start and reset) once per
// statement: one statement of 64 rows costs ~40% less CPU than 64 statements
// of one row (bench/README.md, fifth round). A recorder commits a thousand
// samples every second, an import a million spans at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "run/sqlite_db.hpp"

namespace stepscope {

// The columns of one row inside a multi-row statement, numbered from 1 as
// in a one-row statement.
class RowBinder {
 public:
  RowBinder(SqliteStatement& statement, int first_parameter)
      : statement_(statement), offset_(first_parameter - 1) {}
  RowBinder& bind(int column, int64_t value) {
    statement_.bind(offset_ + column, value);
    return *this;
  }
  RowBinder& bind(int column, double value) {
    statement_.bind(offset_ + column, value);
    return *this;
  }
  RowBinder& bind_text(int column, std::string_view bytes) {
    statement_.bind_text(offset_ + column, bytes);
    return *this;
  }

 private:
  SqliteStatement& statement_;
  int offset_;
};

class BatchedInsert {
 public:
  // `verb` is "INSERT" or "INSERT OR REPLACE"; rows fill all `columns`.
  // Statements are prepared at their first use: a 64-row statement takes a
  // while to compile, and most tables of a recording never need one.
  BatchedInsert(SqliteDb& db, std::string_view verb, std::string_view table, int columns);

  // Inserts rows first..last-1: `bind_row(RowBinder&, index)` binds each.
  // Full batches go through the multi-row statement, the rest one by one.
  template <typename BindRow>
  void append(size_t first, size_t last, BindRow bind_row) {
    size_t i = first;
    for (; i <= last && last - i >= rows_per_statement_; i += rows_per_statement_) {
      SqliteStatement& batch = statement(batch_, rows_per_statement_);
      for (size_t k = 0; k < rows_per_statement_; ++k) {
        RowBinder row(batch, static_cast<int>(k) * columns_ + 1);
        bind_row(row, i + k);
      }
      batch.run();
    }
    for (; i < last; ++i) {
      SqliteStatement& single = statement(single_, 1);
      RowBinder row(single, 1);
      bind_row(row, i);
      single.run();
    }
  }

  size_t rows_per_statement() const { return rows_per_statement_; }

 private:
  SqliteStatement& statement(std::optional<SqliteStatement>& slot, size_t rows);

  SqliteDb& db_;
  std::string verb_, table_;
  int columns_;
  size_t rows_per_statement_;
  std::optional<SqliteStatement> single_, batch_;
};

}  // namespace stepscope
