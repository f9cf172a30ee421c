#include "collectors/pthread_tids.hpp"

#include <dirent.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

namespace stepscope::python {

namespace {

// How far into the descriptor to look: glibc keeps the tid at 0x2d0.
constexpr size_t kSearchBytes = 2048;
constexpr int kMaxAttempts = 5;

}  // namespace

std::vector<pid_t> list_tids(pid_t pid) {
  std::vector<pid_t> tids;
  std::string path = "/proc/" + std::to_string(pid) + "/task";
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) return tids;
  while (const dirent* entry = ::readdir(dir)) {
    int tid = std::atoi(entry->d_name);
    if (tid > 0) tids.push_back(tid);
  }
  ::closedir(dir);
  std::sort(tids.begin(), tids.end());
  return tids;
}

bool PthreadTids::calibrate(const ProcessMemory& memory,
                            const std::vector<PythonThreadStack>& threads) {
  std::vector<pid_t> tids = list_tids(memory.pid());
  std::vector<char> descriptors(threads.size() * kSearchBytes);
  std::vector<ProcessMemory::Region> regions;
  for (size_t i = 0; i < threads.size(); ++i) {
    regions.push_back({threads[i].python_thread_id, descriptors.data() + i * kSearchBytes,
                       kSearchBytes});
  }
  if (threads.empty() || !memory.read_many(regions)) return false;
  for (size_t offset = 0; offset < kSearchBytes; offset += sizeof(pid_t)) {
    std::vector<pid_t> found;
    for (size_t i = 0; i < threads.size(); ++i) {
      pid_t value;
      std::memcpy(&value, descriptors.data() + i * kSearchBytes + offset, sizeof value);
      if (!std::binary_search(tids.begin(), tids.end(), value)) break;
      found.push_back(value);
    }
    std::sort(found.begin(), found.end());
    if (found.size() == threads.size() &&
        std::adjacent_find(found.begin(), found.end()) == found.end()) {
      offset_ = static_cast<int64_t>(offset);
      return true;
    }
  }
  return false;
}

void PthreadTids::fill(const ProcessMemory& memory, std::vector<PythonThreadStack>& threads) {
  if (offset_ < 0) {
    if (attempts_ >= kMaxAttempts || threads.empty()) return;
    ++attempts_;
    if (!calibrate(memory, threads)) return;
  }
  for (PythonThreadStack& thread : threads) {
    pid_t tid = -1;
    if (thread.python_thread_id != 0 &&
        memory.read_value(thread.python_thread_id + static_cast<uint64_t>(offset_), tid)) {
      thread.native_tid = tid;
    }
  }
}

}  // namespace stepscope::python
