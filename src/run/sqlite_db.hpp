// A thin RAII layer over the SQLite C API: a connection and prepared
// statements that throw with the file name and SQLite's own message. It keeps
// run_file.cpp about the schema rather than about error codes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace stepscope {

class SqliteDb;

class SqliteStatement {
 public:
  SqliteStatement(SqliteDb& db, const char* sql);
  ~SqliteStatement();
  SqliteStatement(const SqliteStatement&) = delete;
  SqliteStatement& operator=(const SqliteStatement&) = delete;

  // Binding (1-based, as in SQLite) then run() for statements that return no
  // rows; step() returns false when there is no further row.
  SqliteStatement& bind(int index, int64_t value);
  SqliteStatement& bind(int index, double value);
  SqliteStatement& bind_text(int index, std::string_view bytes);
  SqliteStatement& bind_blob(int index, std::string_view bytes);
  void run();
  bool step();
  // Makes a statement stepped to its end (or part way) ready to be bound and run again.
  void reset();

  int64_t column_int(int index) const;
  bool column_is_null(int index) const;
  double column_double(int index) const;
  std::string column_text(int index) const;  // exact bytes, NUL included
  // A BLOB (or TEXT) column's bytes in place, valid until the next step.
  std::string_view column_blob(int index) const;

 private:
  SqliteDb& db_;
  sqlite3_stmt* stmt_ = nullptr;
};

// One connection, for one thread at a time (opened without SQLite's
// per-call mutex).
class SqliteDb {
 public:
  enum class Mode { kCreate, kReadExisting };
  SqliteDb(const std::string& path, Mode mode);
  ~SqliteDb();
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  void exec(const char* sql);
  const std::string& path() const { return path_; }
  sqlite3* handle() { return db_; }
  // Throws std::runtime_error naming the file, what was being done and SQLite's message.
  [[noreturn]] void fail(std::string_view doing) const;

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
};

}  // namespace stepscope
