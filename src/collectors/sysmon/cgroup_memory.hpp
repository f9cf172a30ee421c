// The memory cgroup of a process: its limit and what it uses. In a container
// (Docker, Kubernetes, a batch scheduler's job) the memory a job can have is
// the cgroup's limit, not the machine's MemTotal: past the limit the kernel's
// OOM killer ends the job while /proc/meminfo still shows memory free.
//
// Both hierarchies: cgroup v2 (memory.max, memory.current) and v1
// (memory.limit_in_bytes, memory.usage_in_bytes). The cgroup's directory is
// found from /proc/PID/cgroup and the cgroup mounts in /proc/self/mountinfo.
// Parsing takes text, so tests feed fixtures; a file that cannot be read or
// parsed leaves its value out, never guessed.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/process/kept_file.hpp"

namespace stepscope {

// A mounted cgroup hierarchy that can hold the memory controller: a v1
// hierarchy with "memory" among its super options, or the v2 one.
struct CgroupMount {
  int version = 0;          // 1 or 2
  std::string root;         // the cgroup path mounted (field 4 of mountinfo)
  std::string mount_point;  // where (field 5), octal escapes decoded
};
std::vector<CgroupMount> parse_cgroup_mounts(std::string_view mountinfo);

// The memory cgroup's directory of a process, from its /proc/PID/cgroup
// text: the v1 memory hierarchy when one is mounted (a hybrid system keeps
// the memory controller there), else the v2 one. Nullopt when the process's
// cgroup lies outside every mount (another cgroup namespace's view).
struct CgroupDir {
  int version = 0;
  std::string path;        // the directory under the mount point
  std::string mount_point; // the hierarchy's mount point: walking up stops there
};
std::optional<CgroupDir> memory_cgroup_dir(std::string_view proc_pid_cgroup, const std::vector<CgroupMount>& mounts);

// A limit file's value: v2 "max" and v1's "unlimited" (a page-rounded
// INT64_MAX) are no limit, as is anything from 2^60 up.
std::optional<uint64_t> parse_cgroup_limit(std::string_view text);

// One "key value" line of memory.stat; nullopt without it.
std::optional<uint64_t> memory_stat_field(std::string_view stat, std::string_view key);

struct CgroupMemory {
  int version = 0;
  std::optional<uint64_t> limit_bytes;  // the least limit of the cgroup and its ancestors; none: unlimited
  uint64_t usage_bytes = 0;             // memory.current / memory.usage_in_bytes: includes page cache
  // usage - inactive file pages: what cannot be reclaimed without swapping
  // or killing (the "working set" of docker stats and the kubelet's eviction).
  uint64_t working_set_bytes = 0;
};

// The files of one memory cgroup (usage, memory.stat, the limits of it and
// its ancestors), kept open and re-read.
class CgroupMemoryFiles {
 public:
  explicit CgroupMemoryFiles(const CgroupDir& dir);
  // Nullopt when the usage file cannot be read (the root of a v2 hierarchy
  // has none). The limits are read again only when `limits_too` (and at the
  // first read): a limit is set, not counted, and a v2 cgroup's takes a
  // read per ancestor.
  std::optional<CgroupMemory> read(bool limits_too = true);

 private:
  std::optional<uint64_t> effective_limit(std::string_view stat);

  bool limit_read_ = false;
  std::optional<uint64_t> limit_;  // as last read
  int version_;
  KeptFile usage_, stat_;
  // v2: memory.max of the cgroup and each ancestor below the mount point;
  // v1: memory.limit_in_bytes, for kernels without hierarchical_memory_limit.
  std::vector<KeptFile> limits_;
};

// Reads the counters of the cgroup in `dir` (and the limits of its ancestors) once.
std::optional<CgroupMemory> read_cgroup_memory(const CgroupDir& dir);

// Reads the memory cgroup of `pid` on this machine; nullopt without one
// (no cgroup memory controller, the process gone, files unreadable).
//
// A process can be moved to another cgroup, so its /proc/PID/cgroup is read
// again, but at most once a second (`now_ns`, any monotonic clock): the
// kernel resolves every hierarchy's path for it, which costs as much as all
// the memory files together. The cgroup's files are reopened only when it
// changed; its limits are read again at the same checks.
class CgroupMemoryReader {
 public:
  CgroupMemoryReader();
  std::optional<CgroupMemory> read(pid_t pid, int64_t now_ns);

 private:
  static constexpr int64_t kMembershipInterval = 1'000'000'000;
  void check_membership(pid_t pid);

  std::vector<CgroupMount> mounts_;
  pid_t pid_ = 0;
  KeptFile membership_;          // /proc/PID/cgroup of pid_
  std::string membership_text_;  // what it said when files_ were opened
  int64_t next_check_ns_ = 0;
  std::optional<CgroupMemoryFiles> files_;
};

}  // namespace stepscope
