#include "run/sqlite_db.hpp"

#include <sqlite3.h>

#include <fmt/format.h>

#include "util/error.hpp"

namespace stepscope {

// A connection is used by one thread at a time (the class is not shared),
// so SQLite's own lock around every call (bind, step, reset: 6% of a
// recorder's commit) is left out.
constexpr int kOneThreadAtATime = SQLITE_OPEN_NOMUTEX;

SqliteDb::SqliteDb(const std::string& path, Mode mode) : path_(path) {
  int flags = (mode == Mode::kCreate ? (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
                                     : SQLITE_OPEN_READWRITE) |
              kOneThreadAtATime;
  int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK && mode == Mode::kReadExisting) {
    // A file we may not write can still be read; only a hot journal left by
    // a killed writer needs write access, and then SQLite says so.
    sqlite3_close(db_);
    db_ = nullptr;
    rc = sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY | kOneThreadAtATime, nullptr);
  }
  if (rc != SQLITE_OK) {
    std::string message = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close(db_);
    db_ = nullptr;
    throw InputError(fmt::format("cannot open {}: {}", path, message));
  }
  sqlite3_busy_timeout(db_, 2000);
}

SqliteDb::~SqliteDb() { sqlite3_close(db_); }

void SqliteDb::exec(const char* sql) {
  char* error = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &error) != SQLITE_OK) {
    std::string message = error ? error : "unknown error";
    sqlite3_free(error);
    throw InputError(fmt::format("{}: {}", path_, message));
  }
}

void SqliteDb::fail(std::string_view doing) const {
  throw InputError(fmt::format("{}: {}: {}", path_, doing, sqlite3_errmsg(db_)));
}

SqliteStatement::SqliteStatement(SqliteDb& db, const char* sql) : db_(db) {
  if (sqlite3_prepare_v2(db.handle(), sql, -1, &stmt_, nullptr) != SQLITE_OK) {
    db.fail(fmt::format("preparing \"{}\"", sql));
  }
}

SqliteStatement::~SqliteStatement() { sqlite3_finalize(stmt_); }

SqliteStatement& SqliteStatement::bind(int index, int64_t value) {
  sqlite3_bind_int64(stmt_, index, value);
  return *this;
}

SqliteStatement& SqliteStatement::bind(int index, double value) {
  sqlite3_bind_double(stmt_, index, value);
  return *this;
}

SqliteStatement& SqliteStatement::bind_text(int index, std::string_view bytes) {
  // Text is stored byte for byte (SQLite does not validate UTF-8), so names
  // read from other processes keep their exact bytes. A null pointer would
  // bind NULL, hence "" for the empty string.
  sqlite3_bind_text64(stmt_, index, bytes.empty() ? "" : bytes.data(), bytes.size(),
                      SQLITE_TRANSIENT, SQLITE_UTF8);
  return *this;
}

SqliteStatement& SqliteStatement::bind_blob(int index, std::string_view bytes) {
  sqlite3_bind_blob64(stmt_, index, bytes.empty() ? "" : bytes.data(), bytes.size(), SQLITE_TRANSIENT);
  return *this;
}

void SqliteStatement::run() {
  if (step()) db_.fail("a write statement returned rows");
  sqlite3_reset(stmt_);
}

void SqliteStatement::reset() { sqlite3_reset(stmt_); }

bool SqliteStatement::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  sqlite3_reset(stmt_);  // statements are kept for reuse: leave this one ready for the next step
  db_.fail(fmt::format("running \"{}\"", sqlite3_sql(stmt_)));
}

int64_t SqliteStatement::column_int(int index) const { return sqlite3_column_int64(stmt_, index); }

bool SqliteStatement::column_is_null(int index) const { return sqlite3_column_type(stmt_, index) == SQLITE_NULL; }

double SqliteStatement::column_double(int index) const {
  return sqlite3_column_double(stmt_, index);
}

std::string SqliteStatement::column_text(int index) const {
  const void* data = sqlite3_column_text(stmt_, index);
  auto size = static_cast<size_t>(sqlite3_column_bytes(stmt_, index));
  return data ? std::string(static_cast<const char*>(data), size) : std::string();
}

std::string_view SqliteStatement::column_blob(int index) const {
  const void* data = sqlite3_column_blob(stmt_, index);
  auto size = static_cast<size_t>(sqlite3_column_bytes(stmt_, index));
  return data ? std::string_view(static_cast<const char*>(data), size) : std::string_view();
}

}  // namespace stepscope
