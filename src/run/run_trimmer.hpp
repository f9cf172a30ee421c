// Keeping a run file under a size (record --max-size; docs/run-format.md,
// "Trimming"): when a commit has taken the file over its limit, its oldest
// samples, spans, flows and counter values are deleted, in one transaction
// with the metadata that says so, so that jobs that run for days keep their
// newest data in a file that stops growing.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "run/sqlite_db.hpp"
#include "run/trimmed_run.hpp"  // the metadata keys a trim writes

namespace stepscope {

// The least --max-size: the schema's own pages, the tables never trimmed
// (strings, frames, stacks ...) and a second's commit take tens of kB, and a
// limit near them would trim at every commit.
inline constexpr uint64_t kSmallestRunSizeLimit = uint64_t{1} << 20;

class RunTrimmer {
 public:
  // `db` is a writer's connection, which must outlive the trimmer.
  RunTrimmer(SqliteDb& db, uint64_t max_bytes);

  // What the file's pages hold: (page_count - freelist_count) * page_size.
  // The pages a trim frees are reused by later inserts, so this, not the
  // file's size, is what the limit bounds. One prepared statement of three
  // PRAGMAs, some 10 to 30 us: cheap enough for every commit.
  uint64_t used_bytes();

  // Outside a transaction, after a commit: when the file uses more than the
  // limit, deletes the oldest rows, whole blocks (of samples, of counter
  // values) and whole runs of row_ranges, never a row that ends at or after `keep_from_ns` (the newest
  // commit's), and writes the metadata that says what is gone. Returns that
  // metadata, for the Run, or nothing when the file was under its limit or
  // nothing could go. The file is brought under its limit at once, then on
  // towards kTargetShare of it by at most kSliceBytes a trim, at this and
  // the next commits.
  std::map<std::string, std::string> trim(int64_t keep_from_ns);

  // Where trims aim, as a share of the limit: the file then grows for a
  // while before the next trim, rather than trimming at every commit.
  static constexpr double kTargetShare = 0.85;
  // A trim holds up the recording (some 10 ms per MiB dropped on a 2-vCPU
  // VM, docs/run-format.md): 15% of a limit of gigabytes is spread over
  // commits, a slice each.
  static constexpr uint64_t kSliceBytes = uint64_t{2} << 20;

 private:
  uint64_t target_bytes() const;
  // In a transaction: what trim() deletes, from `used` bytes down to `goal`.
  std::map<std::string, std::string> delete_oldest(uint64_t used, uint64_t goal, int64_t keep_from_ns);

  SqliteDb& db_;
  uint64_t max_bytes_;
  SqliteStatement used_;  // prepared once: it runs at every commit
  bool catching_up_ = false;  // the last trim stopped above the target: the next goes on
};

}  // namespace stepscope
