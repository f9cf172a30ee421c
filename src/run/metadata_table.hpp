// Reading one value of a run file's metadata table straight from the file,
// before (or without) reading the Run: what the reader and the trimmer ask
// of a trimmed run (trimmed_run.hpp).
#pragma once

#include <cstdint>
#include <optional>

#include "run/sqlite_db.hpp"

namespace stepscope {

// None when the file has no such key; an InputError naming the file, the key
// and the value when it is not a whole number.
std::optional<int64_t> metadata_table_int(SqliteDb& db, const char* key);

}  // namespace stepscope
