#include "collectors/python/pthread_tids.hpp"

#include <algorithm>
#include <cstring>

#include "collectors/process/tree.hpp"

namespace stepscope::python {

namespace {

// How far into the descriptor to look: glibc keeps the tid at 0x2d0.
constexpr size_t kSearchBytes = 2048;
constexpr int kMaxAttempts = 5;

}  // namespace

bool PthreadTids::calibrate(const ProcessMemory& memory,
                            const std::vector<PythonThreadStack>& threads) {
  std::vector<pid_t> tids = thread_ids(memory.pid());
  std::sort(tids.begin(), tids.end());
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
  // One batched read for all threads; one by one if some descriptor is gone.
  std::vector<pid_t> tids(threads.size(), -1);
  std::vector<ProcessMemory::Region> regions;
  for (size_t i = 0; i < threads.size(); ++i) {
    regions.push_back({threads[i].python_thread_id + static_cast<uint64_t>(offset_), &tids[i],
                       sizeof(pid_t)});
  }
  if (!memory.read_many(regions)) {
    for (const ProcessMemory::Region& region : regions) memory.read(region.addr, region.out, region.size);
  }
  for (size_t i = 0; i < threads.size(); ++i) threads[i].native_tid = tids[i];
}

}  // namespace stepscope::python
