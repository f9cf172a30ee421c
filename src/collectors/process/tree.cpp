#include "collectors/process/tree.hpp"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <string>

#include "collectors/process/proc_files.hpp"

namespace stepscope {

namespace {

// Appends the children of every thread of `pid` to `out`.
void append_children(pid_t pid, std::vector<pid_t>& out) {
  for (pid_t tid : thread_ids(pid)) {
    auto text = read_proc_file(task_path(pid, tid, "children"));
    if (!text) continue;
    const char* p = text->data();
    const char* end = p + text->size();
    while (p < end) {
      pid_t child = 0;
      auto [next, ec] = std::from_chars(p, end, child);
      if (ec == std::errc() && child > 0) out.push_back(child);
      p = next == p ? p + 1 : next;
    }
  }
}

}  // namespace

std::vector<pid_t> thread_ids(pid_t pid) {
  std::vector<pid_t> tids;
  std::string path = "/proc/" + std::to_string(pid) + "/task";
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) return tids;
  while (const dirent* entry = ::readdir(dir)) {
    pid_t tid = 0;
    const char* name = entry->d_name;
    auto [end, ec] = std::from_chars(name, name + std::strlen(name), tid);
    if (ec == std::errc() && *end == '\0' && tid > 0) tids.push_back(tid);
  }
  ::closedir(dir);
  return tids;
}

std::vector<pid_t> process_tree(pid_t root) {
  struct stat info;
  if (root <= 0 || ::stat(("/proc/" + std::to_string(root)).c_str(), &info) != 0) return {};
  std::vector<pid_t> tree{root};
  // Breadth first; a pid seen twice (reused between reads) is kept once.
  for (size_t i = 0; i < tree.size(); ++i) {
    std::vector<pid_t> children;
    append_children(tree[i], children);
    for (pid_t child : children) {
      if (std::find(tree.begin(), tree.end(), child) == tree.end()) tree.push_back(child);
    }
  }
  return tree;
}

}  // namespace stepscope
