// A one-off snapshot of the Python stacks of a whole process tree: what
// `stepscope dump` shows for a hung job.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "run/run.hpp"

namespace stepscope {

struct SnapshotFrame {
  std::string function;
  std::string file;
  int line = 0;
};

struct ThreadSnapshot {
  int64_t tid = -1;  // the kernel's thread id, -1 when unknown
  uint64_t python_thread_id = 0;
  std::string name;  // /proc/PID/task/TID/comm
  ThreadState state = ThreadState::kUnknown;
  bool holds_gil = false;
  std::vector<SnapshotFrame> frames;  // innermost first
};

struct ProcessSnapshot {
  pid_t pid = 0;
  std::string command;
  std::string python_version, image;  // empty when not Python
  std::string problem;  // why it is not Python, or why its stacks are missing
  std::vector<ThreadSnapshot> threads;
};

// Throws InputError when `root` does not exist or refuses to be read; other
// processes of the tree carry their problem instead.
std::vector<ProcessSnapshot> snapshot_tree(pid_t root);

}  // namespace stepscope
