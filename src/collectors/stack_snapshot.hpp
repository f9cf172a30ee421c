// A one-off snapshot of a whole process tree: the Python stacks of its
// threads, the ranks its processes are, and torch's Flight Recorder of the
// ranks that run stepscope's hooks. What `stepscope dump` shows for a hung job.
#pragma once

#include <sys/types.h>

#include "run/dump.hpp"

namespace stepscope {

// Throws InputError when `root` does not exist or refuses to be read; other
// processes of the tree carry their problem instead. With `native`, threads
// on a CPU show their native frames too (docs/native-stacks.md).
Dump snapshot_tree(pid_t root, bool native = false);

}  // namespace stepscope
