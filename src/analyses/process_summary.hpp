// The processes of a run and what their threads were doing: the first thing
// to check in a training job's tree (is the main process busy? are the
// DataLoader workers busy, idle, or blocked on disk?).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "run/run.hpp"

namespace stepscope {

struct ProcessSummary {
  int64_t pid = 0;
  int64_t parent_pid = 0;
  StringId command = StringTable::kEmpty;
  std::string python_version;  // empty when not sampled as Python
  int64_t start_ns = 0, end_ns = 0;
  int32_t exit_status = -1;
  size_t threads = 0;
  uint64_t samples = 0;
  uint64_t running = 0, idle = 0, disk_wait = 0;  // samples by thread state
};

std::vector<ProcessSummary> summarize_processes(const Run& run);

}  // namespace stepscope
