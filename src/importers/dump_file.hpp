// Reading back what `stepscope dump --json` wrote (stepscope.dump/1,
// docs/dump-format.md), so that `report` can put the dumps of a job's nodes
// side by side.
#pragma once

#include <string>

#include <simdjson.h>

#include "run/dump.hpp"

namespace stepscope {

// A rank that exited, as dump files and the hooks' exit notes both write it
// (pid, rank, world_size, status, exception).
ExitedRank exited_rank_from(simdjson::dom::element object);

// Whether the file at `path` says it is a dump (its first bytes name the
// format); false for anything else, unreadable files included.
bool is_dump_file(const std::string& path);

// The dump in the file; an InputError naming the file for a dump cut short,
// of another format version, or with fields of the wrong kind.
Dump read_dump_file(const std::string& path);

}  // namespace stepscope
