// The processes of a tree: a root and its descendants.
#pragma once

#include <sys/types.h>

#include <vector>

namespace stepscope {

// `root` followed by its descendants, parents before children, found through
// /proc/PID/task/TID/children (children of every thread, since a child's
// parent is the thread that forked it). Processes that exit while we look are
// left out; an absent root gives an empty list.
std::vector<pid_t> process_tree(pid_t root);

// The thread ids of `pid` (from /proc/PID/task), in no particular order;
// empty when the process is gone.
std::vector<pid_t> thread_ids(pid_t pid);

}  // namespace stepscope
