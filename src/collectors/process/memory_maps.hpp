// The memory mappings of a process, from /proc/PID/maps.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace stepscope {

struct MemoryMapping {
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t offset = 0;  // offset in the file of `start`
  bool writable = false;
  bool executable = false;
  std::string path;  // empty for anonymous memory; "[heap]", "[stack]"... for special ones
};

// The mappings of `pid` in address order, or nullopt when /proc/PID/maps
// cannot be read (no such process, or not ours to look at).
std::optional<std::vector<MemoryMapping>> read_memory_maps(pid_t pid);

// Parses the text of a maps file; lines that do not parse are skipped.
std::vector<MemoryMapping> parse_memory_maps(const std::string& text);

}  // namespace stepscope
