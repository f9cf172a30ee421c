// Persisting a Run as one SQLite file (schema: docs/run-format.md).
//
// RunWriter appends what is new in a Run since its last commit, in one
// transaction, so a recorder can commit every second and a writer killed at
// any moment leaves a file that opens and holds every committed row.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "run/run.hpp"

namespace stepscope {

class SqliteDb;
class SqliteStatement;

class RunWriter {
 public:
  // Creates (or truncates) the file at `path` and writes the schema.
  explicit RunWriter(const std::string& path);
  ~RunWriter();
  RunWriter(const RunWriter&) = delete;
  RunWriter& operator=(const RunWriter&) = delete;

  // Writes every row of `run` not yet written, plus the current processes,
  // threads and metadata (which may have changed), as one transaction.
  // `run` must be the same Run, only grown, at each call.
  void commit(const Run& run);

 private:
  struct Written {
    size_t strings = 0, frames = 0, stacks = 0, samples = 0, spans = 0, flows = 0,
           counter_tracks = 0, counter_values = 0;
  };
  struct Statements;
  void write_new_rows(const Run& run);
  void write_mutable_rows(const Run& run);

  // Declared before the statements, so that they are finalized before the
  // connection closes.
  std::unique_ptr<SqliteDb> db_;
  // Prepared once per file, not once per commit.
  std::unique_ptr<Statements> statements_;
  Written written_;
  // What the file holds of the tables rewritten in place, to write only
  // the rows that changed.
  std::vector<Process> written_processes_;
  std::vector<Thread> written_threads_;
  std::map<std::string, std::string> written_metadata_;
};

// Writes a whole Run in one go.
void save_run(const Run& run, const std::string& path);

// Loads a Run. Throws InputError naming the file when it is missing, is not a
// stepscope run, has another schema version, or is inconsistent.
Run load_run(const std::string& path);

}  // namespace stepscope
