#include "collectors/process/memory_maps.hpp"

#include <cinttypes>
#include <cstdio>

#include <fmt/format.h>

#include "collectors/process/proc_files.hpp"

namespace stepscope {

namespace {

// One line: "start-end perms offset dev inode   path". The path is
// everything after the inode and its padding; it may contain spaces, and the
// kernel appends " (deleted)" to files removed since they were mapped.
std::optional<MemoryMapping> parse_line(const std::string& line) {
  MemoryMapping mapping;
  char perms[8] = {};
  int path_start = -1;
  if (std::sscanf(line.c_str(), "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*u %n",
                  &mapping.start, &mapping.end, perms, &mapping.offset, &path_start) < 4) {
    return std::nullopt;
  }
  mapping.writable = perms[1] == 'w';
  mapping.executable = perms[2] == 'x';
  if (path_start > 0 && static_cast<size_t>(path_start) < line.size()) {
    mapping.path = line.substr(static_cast<size_t>(path_start));
  }
  return mapping;
}

}  // namespace

std::vector<MemoryMapping> parse_memory_maps(const std::string& text) {
  std::vector<MemoryMapping> mappings;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    if (auto mapping = parse_line(text.substr(pos, end - pos))) {
      mappings.push_back(std::move(*mapping));
    }
    pos = end + 1;
  }
  return mappings;
}

std::optional<std::vector<MemoryMapping>> read_memory_maps(pid_t pid) {
  auto text = read_proc_file(fmt::format("/proc/{}/maps", pid));
  if (!text) return std::nullopt;
  return parse_memory_maps(*text);
}

}  // namespace stepscope
