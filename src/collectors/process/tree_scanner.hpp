// The process tree under a root, listed again and again (every 50 ms while
// recording) through descriptors kept open.
//
// process_tree() opens /proc/PID/task and every /proc/PID/task/TID/children
// at each call; opening a /proc file walks its path and builds its inode,
// which costs several times the read. The scanner opens each once and then
// only rewinds and re-reads it, closing what belongs to threads or processes
// that are gone.
#pragma once

#include <sys/types.h>

#include <map>
#include <vector>

#include "util/unique_fd.hpp"

namespace stepscope {

class ProcessTreeScanner {
 public:
  ProcessTreeScanner() = default;
  ProcessTreeScanner(const ProcessTreeScanner&) = delete;
  ProcessTreeScanner& operator=(const ProcessTreeScanner&) = delete;

  // What process_tree(root) returns: `root` and its descendants, parents
  // before children; empty when the root is gone.
  std::vector<pid_t> scan(pid_t root);

 private:
  struct ProcessFiles {
    UniqueFd task_dir;                   // /proc/PID/task
    std::map<pid_t, UniqueFd> children;  // tid -> /proc/PID/task/TID/children
  };

  // Appends the children of every thread of `pid`; false when it is gone.
  bool append_children(pid_t pid, std::vector<pid_t>& out);
  bool list_threads(ProcessFiles& files, pid_t pid);

  std::map<pid_t, ProcessFiles> processes_;
  std::vector<pid_t> tids_;  // reused per process
  std::vector<pid_t> listed_;  // the pids of this scan, to close the others'
};

}  // namespace stepscope
