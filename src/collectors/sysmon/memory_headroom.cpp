#include "collectors/sysmon/memory_headroom.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

#include "collectors/process/proc_files.hpp"
#include "collectors/sysmon/cgroup_memory.hpp"
#include "collectors/sysmon/system.hpp"

namespace stepscope {

namespace {

// Keeps `bound` when it leaves less than the least so far: `limit` less what
// is `used`, and less what is set aside for later, up to half of the rest.
void keep_least(std::optional<MemoryHeadroom>& least, std::optional<uint64_t> limit, std::optional<uint64_t> used,
                const char* bound, uint64_t set_aside = 0) {
  if (!limit) return;
  uint64_t left = *limit > used.value_or(0) ? *limit - used.value_or(0) : 0;
  left -= std::min(set_aside, left / 2);
  if (!least || left < least->bytes) least = MemoryHeadroom{left, bound};
}

std::optional<uint64_t> resource_limit(int resource) {
  rlimit limit{};
  if (getrlimit(resource, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return std::nullopt;
  return static_cast<uint64_t>(limit.rlim_cur);
}

}  // namespace

std::optional<MemoryHeadroom> least_headroom(const MemoryBounds& b) {
  std::optional<MemoryHeadroom> least;
  keep_least(least, b.available, std::nullopt, "the machine's available memory (MemAvailable)");
  keep_least(least, b.cgroup_limit, b.cgroup_working_set, "the memory cgroup's limit");
  keep_least(least, b.data_limit, b.data_used, "the data-segment limit (ulimit -d)", b.data_for_threads);
  return least;
}

MemoryBounds read_memory_bounds() {
  MemoryBounds bounds;
  if (std::optional<std::string> meminfo = read_proc_file("/proc/meminfo")) {
    if (std::optional<MemoryInfo> info = parse_meminfo(*meminfo)) bounds.available = info->available_bytes;
  }
  if (std::optional<CgroupMemory> cgroup = CgroupMemoryReader().read(getpid(), 0)) {
    bounds.cgroup_limit = cgroup->limit_bytes;
    bounds.cgroup_working_set = cgroup->working_set_bytes;
  }
  bounds.data_limit = resource_limit(RLIMIT_DATA);
  if (std::optional<std::string> status = read_proc_file("/proc/self/status")) {
    bounds.data_used = meminfo_bytes(*status, "VmData");
  }
  // A command starts a few threads per core: the analyses, the reader's
  // tables, the other ranks of a job.
  bounds.data_for_threads = (uint64_t{8} << 20) * (std::max(1u, std::thread::hardware_concurrency()) + 4);
  return bounds;
}

}  // namespace stepscope
