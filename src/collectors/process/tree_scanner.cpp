#include "collectors/process/tree_scanner.hpp"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <string>

#include "collectors/process/proc_dir_entries.hpp"
#include "collectors/process/proc_files.hpp"

namespace stepscope {

// The threads of `pid` into tids_. A kept directory of a process that has
// exited lists nothing; the pid is then opened afresh, in case it now names
// a new process.
bool ProcessTreeScanner::list_threads(ProcessFiles& files, pid_t pid) {
  if (files.task_dir.valid() && read_numeric_entries(files.task_dir.get(), tids_) && !tids_.empty()) {
    return true;
  }
  files = ProcessFiles{};
  files.task_dir = UniqueFd::open_read_only(("/proc/" + std::to_string(pid) + "/task").c_str(), O_DIRECTORY);
  return files.task_dir.valid() && read_numeric_entries(files.task_dir.get(), tids_) && !tids_.empty();
}

bool ProcessTreeScanner::append_children(pid_t pid, std::vector<pid_t>& out) {
  ProcessFiles& files = processes_[pid];
  if (!list_threads(files, pid)) {
    processes_.erase(pid);
    return false;
  }
  // Threads that ended take their descriptors with them.
  for (auto it = files.children.begin(); it != files.children.end();) {
    if (std::find(tids_.begin(), tids_.end(), it->first) != tids_.end()) {
      ++it;
      continue;
    }
    it = files.children.erase(it);
  }
  char text[4096];
  for (pid_t tid : tids_) {
    auto [slot, added] = files.children.try_emplace(tid);
    if (added) slot->second = UniqueFd::open_read_only(task_path(pid, tid, "children").c_str());
    ssize_t n = slot->second.valid() ? ::pread(slot->second.get(), text, sizeof text, 0) : -1;
    if (n < 0) {  // the thread ended while we looked: try again next scan
      files.children.erase(slot);
      continue;
    }
    const char* p = text;
    const char* end = text + n;
    while (p < end) {
      pid_t child = 0;
      auto [next, ec] = std::from_chars(p, end, child);
      if (ec == std::errc() && child > 0) out.push_back(child);
      p = next == p ? p + 1 : next;
    }
  }
  return true;
}

std::vector<pid_t> ProcessTreeScanner::scan(pid_t root) {
  std::vector<pid_t> tree;
  if (root <= 0) return tree;
  tree.push_back(root);
  // Breadth first; a pid seen twice (reused between reads) is kept once.
  std::vector<pid_t> children;
  for (size_t i = 0; i < tree.size(); ++i) {
    children.clear();
    if (!append_children(tree[i], children)) {
      if (i == 0) return {};  // the root is gone
      continue;
    }
    for (pid_t child : children) {
      if (std::find(tree.begin(), tree.end(), child) == tree.end()) tree.push_back(child);
    }
  }
  // Processes no longer in the tree keep nothing open.
  for (auto it = processes_.begin(); it != processes_.end();) {
    if (std::find(tree.begin(), tree.end(), it->first) != tree.end()) {
      ++it;
      continue;
    }
    it = processes_.erase(it);
  }
  return tree;
}

}  // namespace stepscope
