// The numeric entries of a /proc directory (pids in /proc, tids in
// /proc/PID/task) through a descriptor kept open: rewound and re-read with
// getdents64, without the allocations of opendir/readdir.
#pragma once

#include <sys/types.h>

#include <vector>

namespace stepscope {

// Replaces `out` with the numeric entries of the directory `fd`, re-read
// from its start; false when the directory cannot be read (for a task
// directory: the process was reaped).
bool read_numeric_entries(int fd, std::vector<pid_t>& out);

}  // namespace stepscope
