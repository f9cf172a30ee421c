// `monitor --format table`: a compact view of the machine, its GPUs and the
// process tree, like nvidia-smi and top side by side. On a terminal each
// sample replaces the previous one in place; otherwise samples are appended
// as plain blocks, with no escape sequences, so the output can be piped.
#pragma once

#include <string>

#include "collectors/sysmon/sysmon.hpp"

namespace stepscope {

struct MonitorTableOptions {
  bool in_place = false;  // clear the screen first (only when stdout is a terminal)
  bool verbose = false;   // also per-core lines, unreadable counts, why no GPU
  std::string gpu_absent_reason;
};

std::string monitor_table(const SysmonSample& sample, const MonitorTableOptions& options);

// 1536 -> "1.5K", binary multiples, for columns of bytes.
std::string human_bytes(double bytes);

}  // namespace stepscope
